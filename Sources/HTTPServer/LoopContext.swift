import LoopInterface

/// The event loop a request arrived on, as an asynchronous handler sees it. `execute` may be
/// called from any thread; everything else only on the loop's own thread.
public struct LoopContext: LoopScheduler, @unchecked Sendable {
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
