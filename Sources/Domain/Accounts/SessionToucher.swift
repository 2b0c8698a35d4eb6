import FoundationEssentials
import StructuredLogging
import Postgres
import Synchronization
import Threads
import Time

/// Writes `lastSeenAt` in the background. Requests only note a session whose `lastSeenAt` is
/// stale; a thread writes the noted ones together, in one statement with asynchronous commit
/// (a crash may lose a second of `lastSeenAt`, which harms nobody), so an authenticated read
/// never waits for a write, let alone a disk flush.
final class SessionToucher: Sendable {
    private let pool: PostgresPool
    private let logger: Logger
    /// What `lastSeenAt` is read from.
    private let clock: WallClock
    /// How often the noted sessions are written.
    let intervalNanoseconds: UInt64
    private let pending = Mutex<Set<UUID>>([])
    /// Held while a flush writes: `recordSessionUse` returns only once what was noted before it is
    /// written, also when the background thread had taken it.
    private let writing = Mutex(())
    private let thread: PeriodicThread

    init(pool: PostgresPool, lifetime: SessionLifetime, clock: WallClock, logger: Logger) {
        self.pool = pool
        self.clock = clock
        self.logger = logger
        // Often enough that a session in use never idles out between its refreshes.
        let seconds = min(1, lifetime.refreshAfterSeconds / 2)
        intervalNanoseconds = UInt64(max(0.01, seconds) * 1e9)
        thread = PeriodicThread(name: "session-touch", intervalNanoseconds: intervalNanoseconds)
        thread.start { [self] in flush() }
    }

    /// Notes that `id` was used; written within `intervalNanoseconds`.
    func note(_ id: UUID) {
        _ = pending.withLock { $0.insert(id) }
    }

    /// Writes what is noted now.
    func flush() {
        writing.withLock { _ in write() }
    }

    private func write() {
        let ids = pending.withLock { ids -> Set<UUID> in
            defer { ids.removeAll(keepingCapacity: true) }
            return ids
        }
        guard !ids.isEmpty else { return }
        let list = ids.map(\.lowercasedText).joined(separator: ",")
        let now = clock.now()
        do {
            try pool.withTransaction { connection in
                try connection.execute("SET LOCAL synchronous_commit TO OFF")
                try connection.execute(
                    """
                    UPDATE sessions SET last_seen_at = \(now) WHERE id = ANY(string_to_array(\(list), ',')::uuid[])
                    """)
            }
        } catch {
            // Not worth a retry: the next use of the session notes it again.
            logger.warning("could not record session use", ["sessions": String(ids.count), "error": String(describing: error)])
        }
    }

    /// Writes what is noted and stops the thread.
    func shutdown() {
        thread.stop()
        flush()
    }
}
