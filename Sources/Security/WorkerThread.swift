import Glibc

/// A joinable POSIX thread running one closure: the hashing pool's workers, kept off Dispatch
/// so that their number, and thus the CPU and memory spent on hashing, is exactly known.
final class WorkerThread: @unchecked Sendable {
    private final class Body: @unchecked Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private let thread: pthread_t
    private var joined = false

    /// Starts a thread running `body`. Traps if the system cannot create a thread: that
    /// happens at start-up, where failing loudly is the right answer.
    init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        if result != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            preconditionFailure("pthread_create failed: \(result)")
        }
        self.thread = thread
    }

    /// Waits for the thread to finish. Call once, from another thread.
    func join() {
        precondition(!joined, "thread joined twice")
        joined = true
        let result = pthread_join(thread, nil)
        precondition(result == 0, "pthread_join failed: \(result)")
    }
}
