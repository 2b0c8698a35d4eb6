import FoundationEssentials
import Postgres

/// The SQL of sessions; tokens appear only as their SHA-256.
enum SessionRepository {

    /// Reads a session selected as `id, user_id, created_at, last_seen_at, expires_at, user_agent,
    /// authenticated_at` (`expires_at` the earlier of its absolute end and its idle end), by those names.
    static func decode(_ row: PostgresRow) throws -> Session {
        Session(
            id: try row.decode(UUID.self, column: "id"), userID: try row.decode(UUID.self, column: "user_id"),
            createdAt: try row.decode(Date.self, column: "created_at"), lastSeenAt: try row.decode(Date.self, column: "last_seen_at"),
            expiresAt: try row.decode(Date.self, column: "expires_at"), userAgent: try row.decode(String?.self, column: "user_agent"),
            authenticatedAt: try row.decode(Date.self, column: "authenticated_at"))
    }

    static func insert(
        _ connection: PostgresConnection, userID: UUID, tokenHash: [UInt8], userAgent: String?,
        lifetime: SessionLifetime, at now: Date
    ) throws -> Session {
        // Its times are the clock's, not the defaults' now(): they are compared with the clock.
        let rows = try connection.query(
            """
            INSERT INTO sessions AS s (user_id, token_hash, created_at, last_seen_at, expires_at, user_agent, authenticated_at)
            VALUES (\(userID), \(tokenHash), \(now), \(now), \(now) + make_interval(secs => \(lifetime.absoluteSeconds)), \(userAgent), \(now))
            RETURNING s.id, s.user_id, s.created_at, s.last_seen_at,
                LEAST(s.expires_at, s.last_seen_at + make_interval(secs => \(lifetime.idleSeconds))) AS expires_at, s.user_agent,
                s.authenticated_at
            """)
        return try decode(rows[0])
    }

    /// The statement of `authenticate` for one lifetime, built once: it runs on every
    /// authenticated request, so its text is neither rebuilt nor hashed per request, and the
    /// lifetime's parameters are encoded once.
    struct Lookup: Sendable {
        let statement: PostgresStatement
        /// `$1` and `$2`; the token hash is appended as `$3`, and the time of the lookup as `$4`.
        let lifetimeBinds: PostgresBindings

        /// The session's columns (`$1` is the idle timeout), then the user's, then whether the
        /// session is due to be marked as seen (`$2`) at the lookup's time (`$4`).
        static let sessionColumns = SQLColumns([
            "session_id": "s.id", "session_user_id": "s.user_id", "session_created_at": "s.created_at",
            "session_last_seen_at": "s.last_seen_at", "session_expires_at": "LEAST(s.expires_at, s.last_seen_at + make_interval(secs => $1))",
            "session_user_agent": "s.user_agent", "session_authenticated_at": "s.authenticated_at",
        ])
        static let userColumns = sessionColumns.followed(by: UserRepository.columns)
        static let staleColumn = userColumns.followed(by: SQLColumns(["is_stale": "s.last_seen_at < $4 - make_interval(secs => $2)"]))
        /// Found once: the lookup runs on every authenticated request.
        private enum Column {
            static let id = sessionColumns.column("session_id"), userID = sessionColumns.column("session_user_id")
            static let createdAt = sessionColumns.column("session_created_at"), lastSeenAt = sessionColumns.column("session_last_seen_at")
            static let expiresAt = sessionColumns.column("session_expires_at"), userAgent = sessionColumns.column("session_user_agent")
            static let authenticatedAt = sessionColumns.column("session_authenticated_at")
            static let isStale = staleColumn.column("is_stale")
        }

        init(lifetime: SessionLifetime) {
            statement = PostgresStatement(
                unsafeSQL: """
                    SELECT \(Lookup.sessionColumns.sql), \(Lookup.userColumns.sql), \(Lookup.staleColumn.sql)
                    FROM sessions s JOIN users u ON u.id = s.user_id
                    WHERE s.token_hash = $3 AND s.expires_at > $4
                      AND s.last_seen_at > $4 - make_interval(secs => $1)
                    """)
            var binds = PostgresBindings()
            binds.append(lifetime.idleSeconds)
            binds.append(lifetime.refreshAfterSeconds)
            lifetimeBinds = binds
        }

        /// The token's live session at `now` with its user, in one round trip; the session's columns
        /// other than its id are decoded only when `withSession` (most requests need only the user).
        func query(tokenHash: [UInt8], withSession: Bool, at now: Date) -> PreparedQuery<Row> {
            var binds = lifetimeBinds
            binds.append(tokenHash)
            binds.append(now)
            return PreparedQuery(statement, binds) { row in
                let session = Lookup.sessionColumns
                return Row(
                    sessionID: try row.decode(UUID.self, Column.id, of: session),
                    session: withSession
                        ? Session(
                            id: try row.decode(UUID.self, Column.id, of: session),
                            userID: try row.decode(UUID.self, Column.userID, of: session),
                            createdAt: try row.decode(Date.self, Column.createdAt, of: session),
                            lastSeenAt: try row.decode(Date.self, Column.lastSeenAt, of: session),
                            expiresAt: try row.decode(Date.self, Column.expiresAt, of: session),
                            userAgent: try row.decode(String?.self, Column.userAgent, of: session),
                            authenticatedAt: try row.decode(Date.self, Column.authenticatedAt, of: session))
                        : nil,
                    user: try UserRepository.decode(row, Lookup.userColumns),
                    isStale: try row.decode(Bool.self, Column.isStale, of: Lookup.staleColumn))
            }
        }

        /// A lookup's row; `session` is nil unless asked for.
        struct Row {
            let sessionID: UUID
            let session: Session?
            let user: User
            /// Whether `last_seen_at` is old enough to be refreshed.
            let isStale: Bool
        }
    }

    /// The user's sessions live at `now`, oldest first.
    static func list(_ connection: PostgresConnection, userID: UUID, lifetime: SessionLifetime, at now: Date) throws -> [Session] {
        try connection.query(
            """
            SELECT s.id, s.user_id, s.created_at, s.last_seen_at,
                LEAST(s.expires_at, s.last_seen_at + make_interval(secs => \(lifetime.idleSeconds))) AS expires_at, s.user_agent,
                s.authenticated_at
            FROM sessions s
            WHERE s.user_id = \(userID) AND s.expires_at > \(now)
              AND s.last_seen_at > \(now) - make_interval(secs => \(lifetime.idleSeconds))
            ORDER BY s.created_at, s.id
            """
        ).map { try decode($0) }
    }

    /// Records that the session's holder proved a credential at `now`; false when the session ended.
    static func markAuthenticated(_ connection: PostgresConnection, id: UUID, userID: UUID, at now: Date) throws -> Bool {
        try connection.execute("UPDATE sessions SET authenticated_at = \(now) WHERE id = \(id) AND user_id = \(userID)") > 0
    }

    static func markAllAuthenticated(_ connection: PostgresConnection, userID: UUID, at now: Date) throws {
        try connection.execute("UPDATE sessions SET authenticated_at = \(now) WHERE user_id = \(userID)")
    }

    static func delete(_ connection: PostgresConnection, id: UUID, userID: UUID) throws -> Bool {
        try connection.execute("DELETE FROM sessions WHERE id = \(id) AND user_id = \(userID)") > 0
    }

    static func deleteAll(_ connection: PostgresConnection, userID: UUID, except kept: UUID? = nil) throws -> Int {
        if let kept {
            return try connection.execute("DELETE FROM sessions WHERE user_id = \(userID) AND id <> \(kept)")
        }
        return try connection.execute("DELETE FROM sessions WHERE user_id = \(userID)")
    }

    /// Removes up to `limit` sessions past their absolute or idle end at `now`; returns how many.
    static func purgeExpired(_ connection: PostgresConnection, lifetime: SessionLifetime, limit: Int, at now: Date) throws -> Int {
        try connection.execute(
            """
            DELETE FROM sessions WHERE id IN (
                SELECT id FROM sessions
                WHERE expires_at <= \(now) OR last_seen_at <= \(now) - make_interval(secs => \(lifetime.idleSeconds))
                LIMIT \(limit))
            """)
    }

    /// Ends the user's oldest sessions so that `kept` and the newest `keep - 1` others remain; returns how many.
    static func evictOldest(_ connection: PostgresConnection, userID: UUID, keeping kept: UUID, keep: Int) throws -> Int {
        try connection.execute(
            """
            DELETE FROM sessions WHERE id IN (
                SELECT id FROM sessions WHERE user_id = \(userID) AND id <> \(kept)
                ORDER BY created_at DESC, id DESC OFFSET \(max(0, keep - 1)))
            """)
    }
}

/// How long sessions live.
public struct SessionLifetime: Sendable {
    /// A session unused this long ends (default 30 days).
    public var idleSeconds: Double = 30 * 86_400
    /// A session ends this long after sign-in, used or not (default 1 year).
    public var absoluteSeconds: Double = 365 * 86_400
    /// `lastSeenAt` is written at most this often, so reads do not become writes.
    public var lastSeenResolutionSeconds: Double = 60

    public init() {}

    /// How old `lastSeenAt` may get before a request refreshes it: the resolution, but never more
    /// than half the idle timeout, or a session in constant use would still idle out (with
    /// `--session-idle-timeout 60` every session ended after a minute).
    var refreshAfterSeconds: Double { min(lastSeenResolutionSeconds, idleSeconds / 2) }
}
