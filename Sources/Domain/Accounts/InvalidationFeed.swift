import FoundationEssentials
import Postgres
import StructuredLogging
import Synchronization
import Threads

/// Keeps a `SessionCache` fresh: one thread with a connection of its own reads, every
/// `pollInterval`, the users that changes committed since its last read recorded
/// (`migrations/0014_cache_invalidations.sql`), drops their entries, and tells the cache it may
/// serve until the read's send time plus the staleness bound.
///
/// A read finds exactly what committed since the last one: the rows whose transaction the last
/// read's snapshot did not see (at or past its `xmax`, or in progress then) and this one's does.
/// Whatever breaks that chain empties the cache and starts it again from a new snapshot: a failed
/// read (the cache serves nothing from then on), a new connection, a different server
/// (`pg_postmaster_start_time()` changes across a restart or a failover, also behind a pooler),
/// or a gap between two reads long enough that the rows it needed may have been deleted.
final class InvalidationFeed: @unchecked Sendable {
    struct Configuration: Sendable {
        var pollInterval: Duration = .milliseconds(20)
        /// The wait before trying a lost connection again, doubled after each failure up to `maxReconnectDelay`.
        var firstReconnectDelay: Duration = .milliseconds(50)
        var maxReconnectDelay: Duration = .seconds(1)
        /// Reads further apart than this empty the cache: rows are deleted once older than `retention`.
        var maxGap: Duration = .seconds(10)
        /// How old rows get before this instance deletes them (any instance may).
        var retention: Duration = .seconds(30)
    }

    private struct State {
        /// A caller waits for a read sent after it asked (`catchUp`).
        var wanted = false
        /// The send time of the last read applied; 0 while the connection is down.
        var appliedSentAt: UInt64 = 0
        var stopping = false
    }

    private let cache: SessionCache
    private let connectionConfiguration: PostgresConfiguration
    private let configuration: Configuration
    private let logger: Logger
    private let lock = ConditionLock()
    /// Touched only under `lock`.
    private var state = State()
    private let thread = Mutex<OSThread?>(nil)

    init(cache: SessionCache, connection: PostgresConfiguration, configuration: Configuration = Configuration(), logger: Logger) {
        self.cache = cache
        var connectionConfiguration = connection
        connectionConfiguration.applicationName = "exosphere-cache"
        // A read that takes longer than this is no use: the cache has stopped serving long before.
        connectionConfiguration.responseTimeout = .seconds(2)
        self.connectionConfiguration = connectionConfiguration
        self.configuration = configuration
        self.logger = logger
    }

    func start() {
        let started = OSThread(name: "cache-feed") { [self] in run() }
        thread.withLock { $0 = started }
    }

    /// Stops the thread; the cache serves nothing after.
    func shutdown() {
        lock.withLock {
            state.stopping = true
            lock.broadcast()
        }
        thread.withLock { $0 }?.join()
        cache.markStale()
    }

    /// Returns once a read sent after the call has been applied (every change committed before
    /// the call is out of the cache), or at once when the feed is down (the cache serves nothing
    /// then), or after `timeout` or at the request's `deadline`, whichever comes first.
    ///
    /// Returning without that read is safe only once the cache no longer serves on the strength
    /// of a read sent before the call: after the staleness bound it would not anyway (every read
    /// before the call vouches until its send time plus the bound), but a request's deadline may
    /// come sooner. So a wait cut short tells the cache to serve nothing until a read sent after
    /// the call is applied (the next one, at most a poll away: the call asked for it).
    func catchUp(timeout: Duration = .seconds(2), deadline: RequestDeadline? = RequestDeadline.current) {
        let asked = monotonicNanoseconds()
        let until = min(asked + timeout.nanoseconds, deadline?.uptimeNanoseconds ?? .max)
        let caughtUp = lock.withLock {
            state.wanted = true
            lock.broadcast()
            while !state.stopping, state.appliedSentAt != 0, state.appliedSentAt < asked {
                if !lock.wait(untilMonotonicNanoseconds: until), monotonicNanoseconds() >= until { return false }
            }
            return true
        }
        if !caughtUp { cache.markStale(before: asked) }
    }

    // MARK: - The thread

    /// Where the reads have got to on the current connection.
    private struct Position {
        var snapshot: String
        var server: String
        var sentAt: UInt64
        /// A snapshot at least `retention` old, for deleting the rows before it.
        var retained: (snapshot: String, at: UInt64)
    }

    private func run() {
        var connection: PostgresConnection?
        var position: Position?
        var reconnectDelay = configuration.firstReconnectDelay
        while true {
            let sentAt: UInt64? = lock.withLock {
                state.wanted = false
                return state.stopping ? nil : monotonicNanoseconds()
            }
            guard let sentAt else { break }
            do {
                if connection == nil {
                    connection = try PostgresConnection(configuration: connectionConfiguration)
                    cache.statistics.feedConnects.add(1, ordering: .relaxed)
                }
                position = try read(connection!, from: position, sentAt: sentAt)
                cache.statistics.feedReads.add(1, ordering: .relaxed)
                lock.withLock {
                    state.appliedSentAt = sentAt
                    lock.broadcast()
                }
                if reconnectDelay != configuration.firstReconnectDelay {
                    logger.notice("the session cache's feed is back")
                    reconnectDelay = configuration.firstReconnectDelay
                }
                wait(until: sentAt + configuration.pollInterval.nanoseconds, orWhenWanted: true)
            } catch {
                cache.markStale()
                connection?.close()
                (connection, position) = (nil, nil)
                lock.withLock {
                    state.appliedSentAt = 0
                    lock.broadcast()
                }
                if reconnectDelay == configuration.firstReconnectDelay {
                    logger.warning(
                        "the session cache's feed failed: every request reads the database until it is back",
                        ["error": String(describing: error)])
                }
                wait(until: monotonicNanoseconds() + reconnectDelay.nanoseconds, orWhenWanted: false)
                reconnectDelay = min(reconnectDelay * 2, configuration.maxReconnectDelay)
            }
        }
        connection?.close()
    }

    private func wait(until deadline: UInt64, orWhenWanted: Bool) {
        lock.withLock {
            while !state.stopping, !(orWhenWanted && state.wanted), monotonicNanoseconds() < deadline {
                lock.wait(untilMonotonicNanoseconds: deadline)
            }
        }
    }

    /// One read: applies what committed since `position` (or empties the cache when the chain
    /// is broken) and marks the cache fresh from `sentAt`.
    private func read(_ connection: PostgresConnection, from position: Position?, sentAt: UInt64) throws -> Position {
        let row: PostgresRow
        if let position {
            row = try connection.query(
                """
                SELECT pg_current_snapshot()::text AS snapshot, pg_postmaster_start_time()::text AS server,
                    (SELECT coalesce(string_agg(DISTINCT user_id::text, ','), '') FROM cache_invalidations
                     WHERE xid >= pg_snapshot_xmax(\(position.snapshot)::pg_snapshot)
                        OR xid = ANY(ARRAY(SELECT pg_snapshot_xip(\(position.snapshot)::pg_snapshot)))) AS users
                """)[0]
        } else {
            row = try connection.query(
                "SELECT pg_current_snapshot()::text AS snapshot, pg_postmaster_start_time()::text AS server, '' AS users")[0]
        }
        let snapshot = try row.decode(String.self, column: "snapshot")
        let server = try row.decode(String.self, column: "server")
        let users = try row.decode(String.self, column: "users")
        var next = Position(snapshot: snapshot, server: server, sentAt: sentAt, retained: position?.retained ?? (snapshot, sentAt))
        if let position, position.server == server, sentAt - position.sentAt <= configuration.maxGap.nanoseconds {
            cache.invalidate(users: users.split(separator: ",").compactMap { UUID(uuidString: String($0)) })
        } else {
            if position != nil {
                logger.notice(
                    position!.server == server
                        ? "the session cache's feed read late: the cache starts again"
                        : "the database server changed: the session cache starts again")
            }
            cache.flush()
        }
        cache.markFresh(sentAt: sentAt)
        if sentAt - next.retained.at >= configuration.retention.nanoseconds {
            // Every transaction before that snapshot ended at least `retention` ago: every
            // instance still reading has read its rows, and the others start again.
            try connection.execute("DELETE FROM cache_invalidations WHERE xid < pg_snapshot_xmin(\(next.retained.snapshot)::pg_snapshot)")
            next.retained = (snapshot, sentAt)
        }
        return next
    }
}
