import FoundationEssentials
import Postgres

/// The SQL of sessions; tokens appear only as their SHA-256.
enum SessionRepository {

    static func decode(_ row: PostgresRow, offset: Int = 0) throws -> Session {
        Session(id: try row.decode(UUID.self, at: offset), userID: try row.decode(UUID.self, at: offset + 1),
                createdAt: try row.decode(Date.self, at: offset + 2), lastSeenAt: try row.decode(Date.self, at: offset + 3),
                expiresAt: try row.decode(Date.self, at: offset + 4), userAgent: try row.decode(String?.self, at: offset + 5))
    }

    static func insert(_ connection: PostgresConnection, userID: UUID, tokenHash: [UInt8], userAgent: String?,
                       lifetime: SessionLifetime) throws -> Session {
        let rows = try connection.query("""
            INSERT INTO sessions AS s (user_id, token_hash, expires_at, user_agent)
            VALUES (\(userID), \(tokenHash), now() + make_interval(secs => \(lifetime.absoluteSeconds)), \(userAgent))
            RETURNING s.id, s.user_id, s.created_at, s.last_seen_at,
                LEAST(s.expires_at, s.last_seen_at + make_interval(secs => \(lifetime.idleSeconds))), s.user_agent
            """)
        return try decode(rows[0])
    }

    /// The statement of `authenticate` for one lifetime, built once: it runs on every
    /// authenticated request, so its text is neither rebuilt nor hashed per request, and the
    /// lifetime's parameters are encoded once.
    struct Lookup: Sendable {
        let statement: PostgresStatement
        /// `$1` and `$2`; the token hash is appended as `$3`.
        let lifetimeBinds: PostgresBindings

        init(lifetime: SessionLifetime) {
            statement = PostgresStatement(unsafeSQL: """
                SELECT s.id, s.user_id, s.created_at, s.last_seen_at,
                    LEAST(s.expires_at, s.last_seen_at + make_interval(secs => $1)), s.user_agent,
                    \(UserRepository.columns),
                    s.last_seen_at < now() - make_interval(secs => $2)
                FROM sessions s JOIN users u ON u.id = s.user_id
                WHERE s.token_hash = $3 AND s.expires_at > now()
                  AND s.last_seen_at > now() - make_interval(secs => $1)
                """)
            var binds = PostgresBindings()
            binds.append(lifetime.idleSeconds)
            binds.append(lifetime.refreshAfterSeconds)
            lifetimeBinds = binds
        }

        /// The parameters for one token: its row is the token's live session with its user, in
        /// one round trip: the session's six columns (`decode`), the user's nine from offset 6
        /// (`UserRepository.decode`), then whether `last_seen_at` is old enough to be refreshed
        /// (`isStale`).
        func binds(tokenHash: [UInt8]) -> PostgresBindings {
            var binds = lifetimeBinds
            binds.append(tokenHash)
            return binds
        }
    }

    /// The session id of a `Lookup` row.
    static func id(_ row: PostgresRow) throws -> UUID { try row.decode(UUID.self, at: 0) }

    /// Whether a `Lookup` row's `last_seen_at` should be refreshed.
    static func isStale(_ row: PostgresRow) throws -> Bool { try row.decode(Bool.self, at: 15) }

    static func list(_ connection: PostgresConnection, userID: UUID, lifetime: SessionLifetime) throws -> [Session] {
        try connection.query("""
            SELECT s.id, s.user_id, s.created_at, s.last_seen_at,
                LEAST(s.expires_at, s.last_seen_at + make_interval(secs => \(lifetime.idleSeconds))), s.user_agent
            FROM sessions s
            WHERE s.user_id = \(userID) AND s.expires_at > now()
              AND s.last_seen_at > now() - make_interval(secs => \(lifetime.idleSeconds))
            ORDER BY s.created_at, s.id
            """).map { try decode($0) }
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

    /// Removes up to `limit` sessions past their absolute or idle end; returns how many.
    static func purgeExpired(_ connection: PostgresConnection, lifetime: SessionLifetime, limit: Int) throws -> Int {
        try connection.execute("""
            DELETE FROM sessions WHERE id IN (
                SELECT id FROM sessions
                WHERE expires_at <= now() OR last_seen_at <= now() - make_interval(secs => \(lifetime.idleSeconds))
                LIMIT \(limit))
            """)
    }

    /// Ends the user's oldest sessions so that `kept` and the newest `keep - 1` others remain; returns how many.
    static func evictOldest(_ connection: PostgresConnection, userID: UUID, keeping kept: UUID, keep: Int) throws -> Int {
        try connection.execute("""
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
