import LoopInterface
import Threads

/// The event loop a request arrived on, as a handler's own I/O sees it. `execute` may be
/// called from any thread; everything else only on the loop's own thread.
public struct LoopContext: LoopScheduler, @unchecked Sendable {
    let loop: EventLoop

    /// The loop's number, from 0.
    public var index: Int { loop.index }

    /// Whether the caller runs on the loop's thread (a task of a route that runs on the loop, not
    /// hopped elsewhere).
    public var isCurrent: Bool { loop.jobs.isCurrent }

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

    /// Runs `body` on the worker pool, for what may block (a file, a pooled connection), and
    /// comes back: the calling task resumes on its loop. Throws `BoundedThreadPool.Rejection.full`
    /// (answered `503`) at once when the pool's queue is full.
    public func blocking<T: Sendable>(_ body: @Sendable () throws -> T) async throws -> T {
        let workers = loop.shared.workers
        guard workers.admitsTask() else { throw BoundedThreadPool.Rejection.full }
        return try await withTaskExecutorPreference(workers) { try body() }
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

/// The worker pool could not take a request's work: the server is busy.
extension BoundedThreadPool.Rejection: HTTPResponseError {
    public var problem: Problem { .serviceUnavailable() }
}
