import Threads
import Glibc

/// A bounded, thread-safe pool of blocking connections, lent to one thread at a time.
///
/// A connection that breaks is discarded together with the idle ones (they usually broke too),
/// so the first request after PostgreSQL comes back opens a fresh connection.
public final class PostgresPool: @unchecked Sendable {
    // @unchecked: every mutable field below is guarded by `mutex`.

    /// Pool figures for metrics.
    public struct Statistics: Sendable, Hashable {
        /// The most connections the pool opens.
        public var size: Int
        /// Connections lent out (including ones being opened for a borrower).
        public var inUse: Int
        /// Open connections waiting to be lent.
        public var idle: Int
        /// Threads waiting for a connection.
        public var waiting: Int
        /// Connections opened since the pool was created.
        public var created: Int
        /// Failed attempts to open a connection.
        public var failed: Int
        /// Connections closed because they broke or were left mid-transaction.
        public var discarded: Int
        /// Acquires that gave up after the timeout.
        public var timedOut: Int
        /// Acquires that failed at once because the server was failing and no connection was free.
        public var failedFast: Int
        /// Whether the server is failing (see `serverFailing`).
        public var failing: Bool
    }

    /// The configuration each connection is opened with.
    public let configuration: PostgresConfiguration
    /// The most connections open at once.
    public let size: Int
    /// How long `withConnection` waits for a free connection before throwing `poolTimeout`.
    public let acquireTimeout: Duration

    private let lock = ConditionLock()
    private var idle: [PostgresConnection] = []
    /// Open plus opening connections, lent or idle.
    private var total = 0
    private var inUse = 0
    private var waiting = 0
    private var created = 0
    private var failed = 0
    private var discarded = 0
    private var timedOut = 0
    private var failedFast = 0
    private var closed = false
    /// Set when a connection could not be opened or broke, cleared when one comes back healthy.
    /// While it is set, one borrower at a time (the probe) opens a connection, and any other that
    /// finds no idle one fails at once (`connectionFailed`), rather than wait: in an outage every
    /// request is answered fast, instead of queueing behind connections that are themselves
    /// waiting to fail (behind a pooler, up to its `query_wait_timeout` each).
    private var serverFailing = false
    /// The connection the probe opened, until it is released; `probing` while it is being opened.
    private var probe: ObjectIdentifier?
    private var probing = false

    /// The default size: two connections per core.
    public static var defaultSize: Int { max(2, 2 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// Creates an empty pool; connections open on demand.
    public init(
        configuration: PostgresConfiguration, size: Int = PostgresPool.defaultSize,
        acquireTimeout: Duration = .seconds(5)
    ) {
        precondition(size > 0, "pool size must be positive")
        self.configuration = configuration
        self.size = size
        self.acquireTimeout = acquireTimeout
    }

    deinit {
        idle.forEach { $0.close() }
    }

    /// Lends a connection to `body` on the calling thread and takes it back afterwards.
    ///
    /// Throws `poolTimeout` when none frees up within `acquireTimeout`, `poolClosed` after
    /// `close()`, and `connectionFailed` (fast) when the server cannot be reached. On a thread
    /// working for a request (`RequestDeadline.current`), every wait (for a free connection,
    /// connecting, each round trip) also ends at the request's deadline, with `timedOut`.
    public func withConnection<Result>(_ body: (PostgresConnection) throws -> Result) throws -> Result {
        let connection = try acquire()
        defer { release(connection) }
        return try body(connection)
    }

    /// A transaction on a pooled connection; see `PostgresConnection.withTransaction`.
    public func withTransaction<Result>(
        isolation: PostgresIsolationLevel? = nil,
        retries: Int = 0,
        _ body: (PostgresConnection) throws -> Result
    ) throws -> Result {
        try withConnection { try $0.withTransaction(isolation: isolation, retries: retries, body) }
    }

    /// Runs one statement on a pooled connection and returns its rows.
    @discardableResult
    public func query(_ query: PostgresQuery) throws -> PostgresRows {
        try withConnection { try $0.query(query) }
    }

    /// Runs one statement on a pooled connection and returns the rows it affected.
    @discardableResult
    public func execute(_ query: PostgresQuery) throws -> Int {
        try withConnection { try $0.execute(query) }
    }

    /// The current figures.
    public var statistics: Statistics {
        locked {
            Statistics(
                size: size, inUse: inUse, idle: idle.count, waiting: waiting, created: created,
                failed: failed, discarded: discarded, timedOut: timedOut, failedFast: failedFast, failing: serverFailing)
        }
    }

    /// Stops lending, wakes waiters (they get `poolClosed`), closes idle connections and waits up to
    /// `timeout` for lent ones to come back. Returns false if some were still lent at the deadline;
    /// those are closed when returned.
    @discardableResult
    public func close(timeout: Duration = .seconds(10)) -> Bool {
        let deadline = Self.deadline(after: timeout)
        let toClose: [PostgresConnection] = locked {
            closed = true
            let connections = idle
            total -= idle.count
            idle.removeAll()
            lock.broadcast()
            return connections
        }
        toClose.forEach { $0.close() }
        return locked {
            while inUse > 0 {
                if !lock.wait(untilMonotonicNanoseconds: deadline) { return inUse == 0 }
            }
            return true
        }
    }

    // MARK: - Lending

    func acquire() throws -> PostgresConnection {
        let request = RequestDeadline.current
        if let request, request.hasPassed {
            throw PostgresError(code: .timedOut, context: "the request's deadline passed before a connection was asked for")
        }
        let ownDeadline = Self.deadline(after: acquireTimeout)
        let deadline = min(ownDeadline, request?.uptimeNanoseconds ?? .max)
        while true {
            enum Step {
                case reuse(PostgresConnection)
                case open(probe: Bool)
            }
            let step: Step = try locked {
                // A thread that has waited takes a returned connection before a newcomer does:
                // without that, newcomers barging in while a woken waiter reacquires the lock can
                // starve it for seconds, which shows as a long latency tail under load.
                var hasWaited = false
                while true {
                    if closed { throw PostgresError(code: .poolClosed) }
                    if idle.count > (hasWaited ? 0 : waiting), let connection = idle.popLast() {
                        inUse += 1
                        // More returned than this waiter needs: pass the turn on.
                        if !idle.isEmpty, waiting > 0 { lock.signal() }
                        return .reuse(connection)
                    }
                    if total < size, !(serverFailing && (probing || probe != nil)) {
                        total += 1
                        inUse += 1
                        if serverFailing { probing = true }
                        return .open(probe: serverFailing)
                    }
                    if serverFailing {
                        failedFast += 1
                        throw PostgresError(code: .connectionFailed, context: "the database is failing and no connection is free")
                    }
                    waiting += 1
                    let signalled = lock.wait(untilMonotonicNanoseconds: deadline)
                    waiting -= 1
                    hasWaited = true
                    if !signalled, !closed, idle.isEmpty, total >= size {
                        timedOut += 1
                        if deadline < ownDeadline {
                            throw PostgresError(code: .timedOut, context: "no connection free before the request's deadline (size \(size))")
                        }
                        throw PostgresError(code: .poolTimeout, context: "no connection free within \(acquireTimeout) (size \(size))")
                    }
                }
            }
            switch step {
            case .reuse(let connection):
                // Every lend costs one `poll`: a server that restarted or failed over closes its
                // end at any moment, even microseconds after the connection came back, and a
                // request must not be the one that finds out.
                if connection.isAliveWhileIdle() {
                    return connection
                }
                connection.close()
                locked {
                    inUse -= 1
                    total -= 1
                    discarded += 1
                    lock.signal()
                }
            case .open(let isProbe):
                do {
                    // Connecting counts against the same deadline: a server that accepts but does not
                    // answer (frozen) would otherwise hold this caller for a whole connect timeout more.
                    // At least 2 s outside a request, as libpq's own timeout once was; a request's
                    // deadline bounds it exactly (the connection reads it), and so the session-mode
                    // SET after connecting, a round trip like any other.
                    var bounded = configuration
                    let now = monotonicNanoseconds()
                    let remaining = Duration.nanoseconds(Int64(clamping: ownDeadline > now ? ownDeadline - now : 0))
                    bounded.connectTimeout = min(configuration.connectTimeout, max(.seconds(2), remaining))
                    let connection = try PostgresConnection(configuration: bounded)
                    // Not proof that the server is back: behind a pooler, connecting reaches the
                    // pooler only. A healthy release is.
                    locked {
                        created += 1
                        if isProbe {
                            probing = false
                            probe = ObjectIdentifier(connection)
                        }
                    }
                    return connection
                } catch {
                    locked {
                        inUse -= 1
                        total -= 1
                        failed += 1
                        if isProbe { probing = false }
                        if (error as? PostgresError)?.code == .connectionFailed { serverFailing = true }
                        // Waiters learn of it now rather than at their deadline.
                        if serverFailing { lock.broadcast() } else { lock.signal() }
                    }
                    throw error
                }
            }
        }
    }

    func release(_ connection: PostgresConnection) {
        if connection.isUsable, connection.isInTransaction {
            // Left mid-transaction (for example by a body that caught an error): undo it.
            connection.rollbackAfterFailure()
        }
        let healthy = connection.isUsable && !connection.isInTransaction
        let toClose: [PostgresConnection] = locked {
            inUse -= 1
            var toClose: [PostgresConnection] = []
            if probe == ObjectIdentifier(connection) { probe = nil }
            if connection.isUsable { serverFailing = false }
            if healthy, !closed {
                idle.append(connection)
            } else {
                toClose.append(connection)
                total -= 1
                if !healthy {
                    discarded += 1
                    // A broken connection usually means the server went away: the idle ones are
                    // stale too, and the next borrower should open a fresh connection.
                    if !connection.isUsable {
                        serverFailing = true
                        lock.broadcast()
                        toClose += idle
                        total -= idle.count
                        discarded += idle.count
                        idle.removeAll()
                    }
                }
            }
            if closed { lock.broadcast() } else if waiting > 0 { lock.signal() }
            return toClose
        }
        toClose.forEach { $0.close() }
    }

    // MARK: - Helpers

    @inline(__always)
    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        try lock.withLock(body)
    }

    static func deadline(after duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        return monotonicNanoseconds() + UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds)) / 1_000_000_000
    }
}
