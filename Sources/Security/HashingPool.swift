import Glibc

/// A fixed set of worker threads with a short bounded queue for expensive work such as
/// password hashing, so that it never runs on HTTP I/O threads and a flood of sign-ins is
/// refused at once (`overloaded`, answered with 503 and `Retry-After`) instead of piling up
/// CPU time and 128 MiB per hash.
///
/// At most `workerCount + queueCapacity` jobs are outstanding at any time. Call `shutdown()`
/// before dropping the pool: the workers keep it alive until then.
public final class HashingPool: @unchecked Sendable {
    /// The number of worker threads.
    public let workerCount: Int
    /// How many jobs may wait while every worker is busy.
    public let queueCapacity: Int

    private enum State { case running, shutDown }

    private let lock = ConditionLock()  // guards everything below; its condition wakes workers
    private var state = State.running
    private var queue: [Job] = []
    private var busy = 0
    private var rejected: UInt64 = 0
    private var completed: UInt64 = 0
    private var threads: [WorkerThread] = []

    /// The number of online processors, at least 1: the default number of workers.
    public static var defaultWorkerCount: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    /// Starts `workers` threads (default: one per online core) behind a queue of
    /// `queueCapacity` jobs (default: twice the workers).
    public init(workers: Int = HashingPool.defaultWorkerCount, queueCapacity: Int? = nil) {
        precondition(workers > 0, "a hashing pool needs at least one worker")
        let queueCapacity = queueCapacity ?? 2 * workers
        precondition(queueCapacity >= 0, "queue capacity cannot be negative")
        self.workerCount = workers
        self.queueCapacity = queueCapacity
        queue.reserveCapacity(queueCapacity + workers)
        let threads = (0..<workers).map { _ in WorkerThread { [self] in self.workLoop() } }
        lock.withLock { self.threads = threads }
    }

    /// Queues `work` to run on a worker and returns at once.
    ///
    /// Throws `SecurityError` with code `overloaded` when the queue is full and `shutDown` after
    /// `shutdown()`; the work then never runs.
    public func submit(_ work: @escaping @Sendable () -> Void) throws {
        try enqueue(Job(work: work, finished: nil))
    }

    /// Runs `work` on a worker and waits for its result, rethrowing what it throws.
    ///
    /// Meant for HTTP worker threads: throws `overloaded` immediately when the queue is full
    /// (and `shutDown` after `shutdown()`) rather than waiting. Never call it from inside pool
    /// work: a worker waiting for its own pool can deadlock it.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) throws -> T {
        let completion = Completion<T>()
        try enqueue(Job(work: { completion.store(Result { try work() }) },
                        finished: { completion.finish() }))
        return try completion.wait().get()
    }

    private func enqueue(_ job: Job) throws {
        try lock.withLock {
            guard state == .running else {
                throw SecurityError(.shutDown, detail: "hashing pool is shut down")
            }
            guard busy + queue.count < workerCount + queueCapacity else {
                rejected += 1
                throw SecurityError(.overloaded, detail: "hashing queue is full")
            }
            queue.append(job)
            lock.signal()
        }
    }

    /// Current figures for metrics.
    public var statistics: Statistics {
        lock.withLock {
            Statistics(workers: workerCount, queueCapacity: queueCapacity, queued: queue.count,
                       busy: busy, rejected: rejected, completed: completed)
        }
    }

    /// Refuses new work, lets the workers finish what is running and queued, and waits for
    /// them to exit. Later calls return at once. Never call it from inside pool work.
    public func shutdown() {
        let threads = lock.withLock {
            guard state == .running else { return [WorkerThread]() }
            state = .shutDown
            lock.broadcast()
            defer { self.threads = [] }
            return self.threads
        }
        for thread in threads { thread.join() }
    }

    private func workLoop() {
        while true {
            let job: Job? = lock.withLock(when: {
                !queue.isEmpty || state == .shutDown
            }) {
                guard !queue.isEmpty else { return nil }  // shut down and drained
                busy += 1
                return queue.removeFirst()
            }
            guard let job else { return }
            job.work()
            lock.withLock {
                busy -= 1
                completed += 1
            }
            // Only now release a waiting caller: one that runs again at once must find its
            // slot free and the figures up to date.
            job.finished?()
        }
    }
}

/// A queued unit of work, and what to do once the pool has booked it as done.
private struct Job: Sendable {
    let work: @Sendable () -> Void
    let finished: (@Sendable () -> Void)?
}

/// The result of one `HashingPool.run` call, handed from a worker to the waiting caller.
private final class Completion<T: Sendable>: @unchecked Sendable {
    private let lock = ConditionLock()
    private var result: Result<T, any Error>?
    private var isFinished = false

    func store(_ result: Result<T, any Error>) {
        lock.withLock { self.result = result }
    }

    func finish() {
        lock.withLock {
            isFinished = true
            lock.signal()
        }
    }

    func wait() -> Result<T, any Error> {
        lock.withLock(when: { isFinished }) { result! }
    }
}
