import Glibc
import Threads

/// A few threads with a short queue for password hashing, so that it never runs on HTTP I/O
/// threads and a flood of sign-ins is refused at once (`overloaded`, answered with 503 and
/// `Retry-After`) instead of piling up CPU time and 128 MiB per hash.
///
/// At most `workerCount + queueCapacity` jobs are outstanding at any time.
public final class HashingPool: Sendable {
    private let pool: BoundedThreadPool

    /// The number of worker threads.
    public var workerCount: Int { pool.threadCount }
    /// How many jobs may wait while every worker is busy.
    public var queueCapacity: Int { pool.queueLimit }

    /// The number of online processors, at least 1: the default number of workers.
    public static var defaultWorkerCount: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    /// Starts `workers` threads (default: one per online core) behind a queue of
    /// `queueCapacity` jobs (default: twice the workers).
    public init(workers: Int = HashingPool.defaultWorkerCount, queueCapacity: Int? = nil) {
        precondition(workers > 0, "a hashing pool needs at least one worker")
        // The idle scheduling class: hashing takes whatever CPU is left over, and every other
        // thread preempts it at once, so a storm of sign-ins cannot delay other requests.
        pool = BoundedThreadPool(name: "hashing", threads: workers, queueLimit: queueCapacity ?? 2 * workers,
                                 priority: .idle)
    }

    /// Queues `work` and returns at once; throws `overloaded` when full, `shutDown` after `shutdown()`.
    public func submit(_ work: @escaping @Sendable () -> Void) throws {
        do {
            try pool.trySubmit(work)
        } catch {
            throw HashingPool.securityError(error)
        }
    }

    /// Runs `work` on a worker and waits for its result, rethrowing what it throws; throws
    /// `overloaded` at once when the queue is full. Never call it from inside pool work.
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) throws -> T {
        do {
            return try pool.run(work)
        } catch let rejection as BoundedThreadPool.Rejection {
            throw HashingPool.securityError(rejection)
        }
    }

    /// Whether new work would be queued now (a hint: another caller may take the last place first).
    public var hasCapacity: Bool {
        let figures = pool.statistics
        return figures.busy + figures.queued < figures.threads + figures.queueLimit
    }

    /// Current figures for metrics.
    public var statistics: Statistics {
        let figures = pool.statistics
        return Statistics(workers: figures.threads, queueCapacity: figures.queueLimit, queued: figures.queued,
                          busy: figures.busy, rejected: UInt64(figures.rejected), completed: UInt64(figures.completed))
    }

    /// Refuses new work, lets the workers finish what is running and queued, and waits for them.
    public func shutdown() {
        pool.shutdown()
    }

    private static func securityError(_ rejection: BoundedThreadPool.Rejection) -> SecurityError {
        switch rejection {
        case .full: SecurityError(.overloaded, detail: "hashing queue is full")
        case .shutDown: SecurityError(.shutDown, detail: "hashing pool is shut down")
        }
    }
}
