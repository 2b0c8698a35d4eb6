import Glibc
import Threads

/// A few threads with a short queue for password hashing, so that it never runs on HTTP I/O
/// threads and a flood of sign-ins is refused at once (`overloaded`, answered with 503 and
/// `Retry-After`) instead of piling up CPU time and memory per hash.
///
/// Two lanes share the threads. `interactive` work (sign-in, password checks: a user who has an
/// account and is waiting) always runs before `bulk` work (registration), and bulk work may hold
/// at most half of the pool's places, so a flood of registrations never keeps a sign-in from a
/// place or from the next free thread. Work whose `Cancellation` is set before it starts (its
/// client went away) is dropped unhashed, and gives its place back at once; so is work still
/// queued at its request's deadline (`RequestDeadline`), whose caller has stopped waiting.
///
/// At most `workerCount + queueCapacity` jobs are outstanding at any time.
public final class HashingPool: @unchecked Sendable {
    /// Which queue a job waits in.
    public enum Lane: Sendable {
        /// Someone with an account is waiting: sign-in, a password check.
        case interactive
        /// New accounts: registration. Never more than half of the places, and only when no interactive job waits.
        case bulk
    }

    private struct Job {
        let work: @Sendable () -> Void
        /// Runs after the job is booked as done (or dropped), so a caller released by it sees current figures.
        let finished: @Sendable () -> Void
        /// Runs instead of `work` when the job is dropped, with the reason.
        let dropped: @Sendable (SecurityError) -> Void
        let cancellation: Cancellation?
        /// Its request's deadline (`monotonicNanoseconds()`): a job still queued then is dropped.
        var deadline: UInt64? = nil
        let lane: Lane
        /// Whose work it is (a client address): the queue takes each owner's jobs in turn.
        var owner: String? = nil

        /// Why the job must not start now, if it must not: its client went away (`cancelled`),
        /// or its request's deadline passed (`overloaded`: its caller has stopped waiting).
        func dropReason(now: UInt64) -> SecurityError? {
            if cancellation?.isCancelled == true { return SecurityError(.cancelled, detail: "the hashing job was cancelled") }
            if let deadline, now >= deadline { return HashingPool.pastDeadline }
            return nil
        }
    }

    /// How the scheduler treats the workers.
    public enum Priority: String, Sendable, CaseIterable {
        /// The idle scheduling class (the default): hashing takes whatever CPU is left over, and
        /// every other thread preempts it at once, so a storm of sign-ins cannot delay other
        /// requests. On a machine that other work keeps busy, a hash waits until it is not.
        case idle
        /// An equal share with the other threads: a hash is never starved by other work, and a
        /// storm of sign-ins slows everything else.
        case normal
    }

    /// The number of worker threads.
    public let workerCount: Int
    /// How many jobs may wait while every worker is busy.
    public let queueCapacity: Int

    private let lock = ConditionLock()
    private var interactive = JobQueue()
    private var bulk = JobQueue()
    private var busy = 0
    private var busyBulk = 0
    private var rejected: UInt64 = 0
    private var completed: UInt64 = 0
    private var completedBulk: UInt64 = 0
    private var abandoned: UInt64 = 0
    private var expired: UInt64 = 0
    private var stopping = false
    private var threads: [OSThread] = []

    /// The number of online processors, at least 1: the default number of workers.
    public static var defaultWorkerCount: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    /// Starts `workers` threads (default: one per online core) behind a queue of
    /// `queueCapacity` jobs (default: twice the workers), scheduled as `priority` says.
    public init(workers: Int = HashingPool.defaultWorkerCount, queueCapacity: Int? = nil, priority: Priority = .idle) {
        precondition(workers > 0, "a hashing pool needs at least one worker")
        workerCount = workers
        self.queueCapacity = queueCapacity ?? 2 * workers
        precondition(self.queueCapacity >= 0)
        let scheduling: OSThread.Priority = priority == .idle ? .idle : .normal
        let started = (0..<workers).map { index in
            OSThread(name: "hashing-\(index)", stackSize: 1 << 20, priority: scheduling) { [self] in workLoop() }
        }
        lock.withLock { threads = started }
    }

    /// Queues `work` and returns at once; throws `overloaded` when full, `shutDown` after `shutdown()`.
    public func submit(lane: Lane = .interactive, owner: String? = nil, _ work: @escaping @Sendable () -> Void) throws {
        try enqueue(Job(work: work, finished: {}, dropped: { _ in }, cancellation: nil, lane: lane, owner: owner))
    }

    /// Runs `work` on a worker and waits for its result, rethrowing what it throws; throws
    /// `overloaded` at once when the lane has no place, and `cancelled` when `cancellation` was
    /// set before a worker took the job. Never call it from inside pool work.
    ///
    /// With a `deadline` (by default the calling thread's request's), the caller waits no longer
    /// than it and then gets `overloaded`: a job no worker took by then is dropped unhashed, and
    /// one that is running finishes for nobody.
    ///
    /// Jobs of one `owner` (a client address) wait behind the other owners' jobs queued as early
    /// in their turn: a newcomer's first job goes before a flood's second, so one owner's backlog
    /// delays another owner by at most one of its jobs.
    public func run<T: Sendable>(
        lane: Lane = .interactive, cancellation: Cancellation? = nil, owner: String? = nil,
        deadline: RequestDeadline? = RequestDeadline.current,
        _ work: @escaping @Sendable () throws -> T
    ) throws -> T {
        let completion = Completion<T>()
        try enqueue(
            Job(
                work: { completion.store(Result { try work() }) }, finished: { completion.finish() },
                dropped: { completion.store(.failure($0)) },
                cancellation: cancellation, deadline: deadline?.uptimeNanoseconds, lane: lane, owner: owner))
        guard let deadline else { return try completion.wait().get() }
        guard let result = completion.wait(untilMonotonicNanoseconds: deadline.uptimeNanoseconds) else {
            throw HashingPool.pastDeadline
        }
        return try result.get()
    }

    /// What a job's caller gets when its request's deadline comes before the job's result.
    static let pastDeadline = SecurityError(.overloaded, detail: "no hashing result before the request's deadline")

    /// Whether new interactive work would be queued now (a hint: another caller may take the last
    /// place first). Places held by work whose client has gone count as free, and are freed. A
    /// caller refuses its work when this is false, so that counts as a rejection.
    public var hasCapacity: Bool {
        var dropped: [(Job, SecurityError)] = []
        defer { HashingPool.release(dropped) }
        lock.lock()
        defer { lock.unlock() }
        if busy + interactive.count + bulk.count >= workerCount + queueCapacity { dropped = dropAbandoned() }
        let free = busy + interactive.count + bulk.count < workerCount + queueCapacity
        if !free { rejected += 1 }
        return free
    }

    /// Current figures for metrics.
    public var statistics: Statistics {
        lock.withLock {
            Statistics(
                workers: workerCount, queueCapacity: queueCapacity, queued: interactive.count + bulk.count,
                busy: busy, rejected: rejected, completed: completed, completedBulk: completedBulk, abandoned: abandoned,
                expired: expired)
        }
    }

    /// Refuses new work, lets the workers finish what is running and queued, and waits for them.
    public func shutdown() {
        let joining = lock.withLock {
            stopping = true
            lock.broadcast()
            defer { threads = [] }
            return threads
        }
        for thread in joining { thread.join() }
    }

    // MARK: - Queueing

    /// Removes the queued jobs whose client has gone or whose deadline has passed; call with the
    /// lock held, and `release` them after.
    private func dropAbandoned() -> [(Job, SecurityError)] {
        let now = monotonicNanoseconds()
        let dropped = interactive.removeDroppable(now: now) + bulk.removeDroppable(now: now)
        for (_, reason) in dropped {
            if reason.code == .cancelled { abandoned += 1 } else { expired += 1 }
        }
        return dropped
    }

    /// Tells the callers of dropped jobs; call without the lock.
    private static func release(_ dropped: [(Job, SecurityError)]) {
        for (job, reason) in dropped {
            job.dropped(reason)
            job.finished()
        }
    }

    private func enqueue(_ job: Job) throws {
        var dropped: [(Job, SecurityError)] = []
        defer { HashingPool.release(dropped) }
        lock.lock()
        defer { lock.unlock() }
        guard !stopping else { throw SecurityError(.shutDown, detail: "hashing pool is shut down") }
        if let deadline = job.deadline, monotonicNanoseconds() >= deadline {
            // Its caller would not wait for it.
            expired += 1
            throw HashingPool.pastDeadline
        }
        let places = workerCount + queueCapacity
        // Jobs of clients that went away hold places they will never use: free them first.
        if busy + interactive.count + bulk.count >= places { dropped = dropAbandoned() }
        let outstanding = busy + interactive.count + bulk.count
        let bulkOutstanding = busyBulk + bulk.count
        guard outstanding < places, job.lane == .interactive || bulkOutstanding < max(1, places / 2) else {
            rejected += 1
            throw SecurityError(.overloaded, detail: "hashing queue is full")
        }
        switch job.lane {
        case .interactive: interactive.insertInTurn(job)
        case .bulk: bulk.insertInTurn(job)
        }
        lock.signal()
    }

    private func workLoop() {
        lock.lock()
        while true {
            while interactive.isEmpty, bulk.isEmpty, !stopping { lock.wait() }
            guard let job = interactive.popFirst() ?? bulk.popFirst() else { break }  // stopping and drained
            if let reason = job.dropReason(now: monotonicNanoseconds()) {
                if reason.code == .cancelled { abandoned += 1 } else { expired += 1 }
                lock.unlock()
                job.dropped(reason)
                job.finished()
                lock.lock()
                continue
            }
            busy += 1
            if job.lane == .bulk { busyBulk += 1 }
            lock.unlock()
            job.work()
            lock.lock()
            busy -= 1
            if job.lane == .bulk {
                busyBulk -= 1
                completedBulk += 1
            }
            completed += 1
            lock.unlock()
            job.finished()
            lock.lock()
        }
        lock.unlock()
    }

    /// A FIFO of jobs that reuses its storage.
    private struct JobQueue {
        private var jobs: [Job?] = []
        private var head = 0

        var count: Int { jobs.count - head }
        var isEmpty: Bool { head == jobs.count }

        mutating func append(_ job: Job) { jobs.append(job) }

        /// Queues a job in its owner's turn: if its owner has `n` jobs queued, it goes before the
        /// first job that is another owner's `n + 1`-th or later (fair queuing by rounds; jobs
        /// without an owner are one owner). At most a queue's length of steps, under the lock.
        mutating func insertInTurn(_ job: Job) {
            insert(job, beforeRound: jobs[head...].count { $0?.owner == job.owner })
        }

        /// Inserts `job` before the first queued job that is its owner's `round + 1`-th or later.
        private mutating func insert(_ job: Job, beforeRound round: Int) {
            var seen: [String: Int] = [:]
            for index in head..<jobs.count {
                guard let queued = jobs[index] else { continue }
                let owner = queued.owner ?? ""
                if seen[owner, default: 0] > round {
                    jobs.insert(job, at: index)
                    return
                }
                seen[owner, default: 0] += 1
            }
            jobs.append(job)
        }

        mutating func popFirst() -> Job? {
            guard head < jobs.count else { return nil }
            let job = jobs[head]
            jobs[head] = nil
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                head = 0
            }
            return job
        }

        /// Takes out the jobs whose client has gone or whose deadline has passed, with the reason.
        /// Each job's cancellation is read once: a client may leave while this runs, and a job read
        /// twice could be neither kept nor removed (its caller would then wait forever).
        mutating func removeDroppable(now: UInt64) -> [(Job, SecurityError)] {
            var kept: [Job?] = []
            var removed: [(Job, SecurityError)] = []
            for case let job? in jobs[head...] {
                if let reason = job.dropReason(now: now) { removed.append((job, reason)) } else { kept.append(job) }
            }
            guard !removed.isEmpty else { return [] }
            jobs = kept
            head = 0
            return removed
        }
    }
}
