import StructuredLogging
import Postgres
import Threads
import Time

/// Deletes what accounts leave behind: sessions past their end, throttle rows whose window ended
/// long ago, expired mailed tokens, security events past their retention and live events past
/// the resumable window (`UserEventRepository.retentionSeconds`), in batches, so that no statement holds many rows or runs for long.
///
/// Every instance runs it, but one at a time: each batch is a transaction that takes a
/// transaction-level advisory lock without waiting, so an instance that finds it held skips its
/// round. (A session-level lock could never be released behind a pooler in transaction mode, where
/// the unlock may run on another server connection.)
public final class Housekeeping: Sendable {
    /// Advisory lock key: "exo-hk" in ASCII, so that it is recognisable in `pg_locks`.
    public static let lockKey: Int64 = 0x6578_6F2D_686B
    /// Rows deleted per statement.
    static let batchSize = 1_000

    private let pool: PostgresPool
    private let lifetime: SessionLifetime
    /// What sessions, throttle windows and tokens end by. Security events and live events are
    /// stamped by the database's now(), and measured by it.
    private let clock: WallClock
    /// Throttle rows older than this (longer than any throttle's window) go.
    private let throttleRetentionSeconds: Double
    /// Security events older than this go.
    private let activityRetentionSeconds: Double
    private let logger: Logger
    private let thread: PeriodicThread

    /// Starts the background thread; the first round runs after one interval.
    public init(
        pool: PostgresPool, lifetime: SessionLifetime, throttleRetentionSeconds: Double, activityRetentionSeconds: Double,
        intervalSeconds: Double, clock: WallClock = .system, logger: Logger
    ) {
        self.clock = clock
        self.activityRetentionSeconds = activityRetentionSeconds
        self.pool = pool
        self.lifetime = lifetime
        self.throttleRetentionSeconds = throttleRetentionSeconds
        self.logger = logger
        thread = PeriodicThread(name: "housekeeping", intervalNanoseconds: UInt64(max(0.05, intervalSeconds) * 1e9))
        thread.start { [self] in round() }
    }

    /// One round now, on the calling thread: the numbers deleted, or nil when another instance holds the lock.
    @discardableResult
    public func runOnce() throws -> (sessions: Int, throttles: Int, tokens: Int, events: Int, liveEvents: Int)? {
        let now = clock.now()
        guard let sessions = try drain({ try SessionRepository.purgeExpired($0, lifetime: lifetime, limit: Housekeeping.batchSize, at: now) })
        else {
            return nil
        }
        let throttles = try drain {
            try ThrottleRepository.purge($0, olderThanSeconds: throttleRetentionSeconds, limit: Housekeeping.batchSize, at: now)
        }
        let tokens = try drain {
            try AccountTokenRepository.purgeExpired($0, limit: Housekeeping.batchSize, at: now)
                + IDTokenFreshnessRepository.purgeExpired($0, limit: Housekeeping.batchSize, at: now)
                + MFARepository.purgeExpiredChallenges($0, limit: Housekeeping.batchSize, at: now)
                + EmailCodeRepository.purgeExpired($0, limit: Housekeeping.batchSize, at: now)
        }
        let events = try drain {
            try ActivityRepository.purge($0, olderThanSeconds: activityRetentionSeconds, limit: Housekeeping.batchSize)
        }
        let liveEvents = try drain {
            try UserEventRepository.purge($0, olderThanSeconds: UserEventRepository.retentionSeconds, limit: Housekeeping.batchSize)
                + UserEventRepository.purgeStaleWatches(
                    $0, olderThanSeconds: UserEventRepository.watchRetentionSeconds, limit: Housekeeping.batchSize)
        }
        return (sessions, throttles ?? 0, tokens ?? 0, events ?? 0, liveEvents ?? 0)
    }

    /// Runs a batch deletion, each batch in a transaction holding the lock, until a batch comes
    /// back short (or the thread stops); the total deleted, or nil when the lock was held elsewhere.
    private func drain(_ batch: (PostgresConnection) throws -> Int) throws -> Int? {
        var total = 0
        while !thread.isStopping {
            let deleted = try pool.withTransaction { connection -> Int? in
                guard try connection.query("SELECT pg_try_advisory_xact_lock(\(Housekeeping.lockKey))")[0].decode(Bool.self, at: 0) else {
                    return nil
                }
                return try batch(connection)
            }
            guard let deleted else { return total == 0 ? nil : total }
            total += deleted
            if deleted < Housekeeping.batchSize { break }
        }
        return total
    }

    /// Stops the thread after its current batch.
    public func shutdown() {
        thread.stop()
    }

    private func round() {
        do {
            if let (sessions, throttles, tokens, events, liveEvents) = try runOnce(), sessions + throttles + tokens + events + liveEvents > 0 {
                logger.info(
                    "housekeeping",
                    [
                        "sessions.deleted": String(sessions), "throttles.deleted": String(throttles),
                        "tokens.deleted": String(tokens), "events.deleted": String(events), "live_events.deleted": String(liveEvents),
                    ])
            }
        } catch {
            logger.warning("housekeeping failed", ["error": String(describing: error)])
        }
    }
}
