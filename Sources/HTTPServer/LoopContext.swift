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

/// The event loop a request arrived on, as an asynchronous handler sees it. `execute` may be
/// called from any thread; everything else only on the loop's own thread.
public struct LoopContext: @unchecked Sendable {
    let loop: EventLoop

    /// The loop's number, from 0.
    public var index: Int { loop.index }

    /// Runs `task` on the loop's thread soon.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        loop.execute(task)
    }

    /// Runs `work` on the server's worker pool, for what must not block the loop (a transaction
    /// on a pooled connection); false when the pool's queue is full. `work` hands its result back
    /// with `execute`.
    public func offload(_ work: @escaping @Sendable () -> Void) -> Bool {
        loop.shared.workers.submit(work)
    }

    /// Starts watching `source`.
    public func watch(_ source: LoopSource) throws(SystemError) {
        try loop.watch(source)
    }

    /// Stops watching `source`; call it before closing the descriptor.
    public func unwatch(_ source: LoopSource) {
        loop.unwatch(source)
    }

    /// This loop's one instance of `Value`, made by `make` on first use and kept until the loop ends.
    public func local<Value: AnyObject>(_ make: () -> Value) -> Value {
        loop.local(make)
    }
}
