// What a handler's own I/O needs of an event loop, apart from the server that runs the loops: the
// database pipelines (PostgresLoop) depend on this, not on HTTPServer.

/// A descriptor an event loop watches for a handler's own I/O (a pipelined database connection,
/// say); every callback runs on the loop's thread.
public protocol LoopSource: AnyObject {
    /// The descriptor; it must stay open while the source is watched.
    var fileDescriptor: Int32 { get }
    /// Whether the loop should wait for the descriptor to be writable as well as readable;
    /// read after every callback.
    var wantsWrite: Bool { get }
    /// The descriptor is readable, hung up or failed.
    func readable()
    /// The descriptor is writable.
    func writable()
    /// Once per loop wake-up, after its events and tasks: the place to send what was batched.
    func wakeUpEnded()
    /// The loop is ending: release what the source holds. It is no longer watched.
    func loopEnded()
}

/// An event loop as the I/O it runs for handlers sees it. `execute` may be called from any
/// thread; everything else only on the loop's own thread.
public protocol LoopScheduler: Sendable {
    /// The loop's number, from 0.
    var index: Int { get }
    /// Runs `task` on the loop's thread soon.
    func execute(_ task: @escaping @Sendable () -> Void)
    /// Runs `work` off the loop (on the server's worker pool), for what must not block it; false
    /// when the pool's queue is full. `work` hands its result back with `execute`.
    func offload(_ work: @escaping @Sendable () -> Void) -> Bool
    /// Starts watching `source`.
    func watch(_ source: LoopSource) throws
    /// Stops watching `source`; call it before closing the descriptor.
    func unwatch(_ source: LoopSource)
    /// This loop's one instance of `Value`, made by `make` on first use and kept until the loop ends.
    func local<Value: AnyObject>(_ make: () -> Value) -> Value
}
