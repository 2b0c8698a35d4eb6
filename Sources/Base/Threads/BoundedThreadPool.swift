/// A fixed set of threads running submitted work from a bounded queue.
///
/// Work that blocks (database round trips, password hashing) runs here, never on an event loop.
/// At most `threadCount + queueLimit` jobs are outstanding; beyond that new work is refused at
/// once, so an overload turns into fast `503`s rather than unbounded memory and latency.
public final class BoundedThreadPool: @unchecked Sendable {
    /// Figures for metrics.
    public struct Statistics: Sendable, Hashable {
        public var threads: Int
        public var queueLimit: Int
        public var busy: Int
        public var queued: Int
        public var rejected: Int
        public var completed: Int
    }

    /// Why work was not accepted.
    public enum Rejection: Error, Sendable {
        case full
        case shutDown
    }

    public let name: String
    public let threadCount: Int
    public let queueLimit: Int

    private struct Job {
        let work: @Sendable () -> Void
        /// Runs after the job is booked as done, so a caller released by it sees current figures and a free slot.
        let finished: (@Sendable () -> Void)?
    }

    private let lock = ConditionLock()
    private var queue: [Job?] = []
    private var head = 0
    private var busy = 0
    private var rejected = 0
    private var completed = 0
    private var stopping = false
    private var threads: [OSThread] = []

    public init(name: String, threads: Int, queueLimit: Int, stackSize: Int = 1 << 20, priority: OSThread.Priority = .normal) {
        precondition(threads > 0 && queueLimit >= 0)
        self.name = name
        self.threadCount = threads
        self.queueLimit = queueLimit
        let started = (0..<threads).map { index in
            OSThread(name: "\(name)-\(index)", stackSize: stackSize, priority: priority) { [self] in workLoop() }
        }
        lock.withLock { self.threads = started }
    }

    /// Queues work and returns at once; false (nothing queued) when full or shut down.
    @discardableResult
    public func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        (try? enqueue(Job(work: work, finished: nil))) != nil
    }

    /// Queues work, throwing the reason when it cannot be queued.
    public func trySubmit(_ work: @escaping @Sendable () -> Void) throws(Rejection) {
        try enqueue(Job(work: work, finished: nil))
    }

    /// Runs work on a pool thread and waits for its result, rethrowing what it throws.
    ///
    /// Throws `Rejection` at once when the pool is full or shut down. Never call it from inside
    /// the same pool's work: a worker waiting for its own pool can deadlock it.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) throws -> T {
        let completion = Completion<T>()
        try enqueue(Job(work: { completion.store(Result { try work() }) }, finished: { completion.finish() }))
        return try completion.wait().get()
    }

    /// Whether `submit` would take one more job now, counted as a rejection when not: for a
    /// caller about to start a task on the pool's `TaskExecutor`, which never refuses.
    public func admitsTask() -> Bool {
        lock.withLock {
            guard !stopping, busy + (queue.count - head) < threadCount + queueLimit else {
                rejected += 1
                return false
            }
            return true
        }
    }

    public var statistics: Statistics {
        lock.withLock {
            Statistics(
                threads: threadCount, queueLimit: queueLimit, busy: busy, queued: queue.count - head,
                rejected: rejected, completed: completed)
        }
    }

    /// Refuses new work, runs what is queued, then joins the threads. Later calls return at once.
    public func shutdown() {
        let joining = lock.withLock {
            stopping = true
            lock.broadcast()
            defer { threads = [] }
            return threads
        }
        for thread in joining { thread.join() }
    }

    /// Queues a job past the bound: the next step of a task the pool already took (see
    /// `TaskExecutor`). After shutdown it runs on a thread of its own, so that no task is lost.
    private func enqueueAlways(_ work: @escaping @Sendable () -> Void) {
        lock.lock()
        guard !stopping else {
            lock.unlock()
            OSThread(name: "\(name)-late", work).detach()
            return
        }
        queue.append(Job(work: work, finished: nil))
        lock.signal()
        lock.unlock()
    }

    private func enqueue(_ job: Job) throws(Rejection) {
        lock.lock()
        defer { lock.unlock() }
        guard !stopping else { throw .shutDown }
        guard busy + (queue.count - head) < threadCount + queueLimit else {
            rejected += 1
            throw .full
        }
        queue.append(job)
        lock.signal()
    }

    private func workLoop() {
        lock.lock()
        while true {
            while head == queue.count, !stopping { lock.wait() }
            if head == queue.count { break }  // stopping and drained
            let job = queue[head]!
            queue[head] = nil
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1024 {
                queue.removeFirst(head)
                head = 0
            }
            busy += 1
            lock.unlock()
            job.work()
            lock.lock()
            busy -= 1
            completed += 1
            if let finished = job.finished {
                lock.unlock()
                finished()
                lock.lock()
            }
        }
        lock.unlock()
    }
}

/// Tasks may prefer the pool as their executor (`Task(executorPreference:)`): their code, blocking
/// or not, then runs on its threads, and each step after a suspension comes back to them. The
/// first job of a task is the caller's to admit (`hasRoom`); the steps after it are always taken.
extension BoundedThreadPool: TaskExecutor {
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        enqueueAlways { job.runSynchronously(on: executor) }
    }
}

/// The result of one job that a caller waits for, handed from a pool thread to it: stored by the
/// job, released by `finish` once the pool has booked the job as done (so that the caller sees
/// current figures and a free place).
public final class Completion<T: Sendable>: @unchecked Sendable {
    private let lock = ConditionLock()
    private var result: Result<T, any Error>?
    private var isFinished = false

    public init() {}

    public func store(_ result: Result<T, any Error>) {
        lock.withLock { self.result = result }
    }

    public func finish() {
        lock.withLock {
            isFinished = true
            lock.signal()
        }
    }

    /// Blocks until `finish`; the stored result (`finish` comes after `store`).
    public func wait() -> Result<T, any Error> {
        lock.withLock(when: { isFinished }) { result! }
    }

    /// Blocks until `finish` or `deadline` (on `monotonicNanoseconds()`), whichever comes first;
    /// nil at the deadline, when the job has not finished.
    public func wait(untilMonotonicNanoseconds deadline: UInt64) -> Result<T, any Error>? {
        lock.withLock {
            while !isFinished {
                if !lock.wait(untilMonotonicNanoseconds: deadline), monotonicNanoseconds() >= deadline { break }
            }
            return isFinished ? result! : nil
        }
    }
}
