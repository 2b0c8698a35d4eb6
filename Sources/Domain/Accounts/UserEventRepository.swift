import FoundationEssentials
import Postgres

/// One change to a user as the database numbered it (`migrations/0013_user_events.sql`).
public struct UserEventRecord: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case profile
        case imageAdded = "image_added"
        case imageDeleted = "image_deleted"
    }

    /// The user's own sequence number: the SSE event id.
    public let number: Int64
    public let kind: Kind
    /// The image of an image event.
    public let objectID: UUID?
}

/// What a user's event streams missed after a number: the kept events (at most a limit), the
/// user's latest number, the user as they are now (for `profile`), and the sessions that live.
public struct UserEventBacklog: Sendable {
    public let events: [UserEventRecord]
    /// The user's latest number before the events were read (every event up to it is in `events`
    /// unless it was purged or the limit cut the list).
    public let latest: Int64
    /// Whether the limit cut the list.
    public let truncated: Bool
    /// The user now; nil when the account is gone.
    public let user: User?
    public let liveSessions: Set<UUID>
}

enum UserEventRepository {
    /// How long events are kept: a stream resumed within 5 minutes (the contract) misses nothing,
    /// with room for a slow client and a housekeeping round.
    static let retentionSeconds: Double = 600
    /// How long an instance's mark of a user with streams lasts unrefreshed (it refreshes every minute).
    static let watchRetentionSeconds: Double = 600

    /// The user's latest event number (0 before any), or nil when there is no such user.
    static func latest(_ connection: PostgresConnection, userID: UUID) throws -> Int64? {
        try connection.query("SELECT event_seq FROM users WHERE id = \(userID)").first.map { try $0.decode(Int64.self, column: "event_seq") }
    }

    /// The kept events after `after`, oldest first, at most `limit`.
    static func events(_ connection: PostgresConnection, userID: UUID, after: Int64, limit: Int) throws -> [UserEventRecord] {
        let rows = try connection.query(
            """
            SELECT seq, type, object_id FROM user_events WHERE user_id = \(userID) AND seq > \(after) ORDER BY seq LIMIT \(limit)
            """)
        return try rows.compactMap { row in
            // A type this build does not know (a newer instance wrote it) is left out, not an error.
            guard let kind = UserEventRecord.Kind(rawValue: try row.decode(String.self, column: "type")) else { return nil }
            return UserEventRecord(
                number: try row.decode(Int64.self, column: "seq"), kind: kind, objectID: try row.decode(UUID?.self, column: "object_id"))
        }
    }

    /// Which of these sessions still exist and have not reached their absolute end at `now` (an
    /// open stream is use enough: the idle end does not apply to it).
    static func liveSessions(_ connection: PostgresConnection, ids: [UUID], at now: Date) throws -> Set<UUID> {
        guard !ids.isEmpty else { return [] }
        let rows = try connection.query(
            "SELECT id FROM sessions WHERE id = ANY(\(PostgresArray(ids.map(\.lowercasedText)))::uuid[]) AND expires_at > \(now)")
        return Set(try rows.map { try $0.decode(UUID.self, column: "id") })
    }

    /// The transaction commits without waiting for its WAL to reach the disk.
    static func withoutWaitingForTheDisk(_ connection: PostgresConnection) throws {
        _ = try connection.query("SELECT set_config('synchronous_commit', 'off', true)")
    }

    /// Marks the users as having streams on `instance` (or refreshes the marks): their changes are
    /// notified from now on.
    static func watch(_ connection: PostgresConnection, users: [UUID], instance: UUID) throws {
        guard !users.isEmpty else { return }
        try connection.execute(
            """
            INSERT INTO live_streams (user_id, instance_id)
            SELECT user_id, \(instance) FROM unnest(\(PostgresArray(users.map(\.lowercasedText)))::uuid[]) AS user_id
            ON CONFLICT (user_id, instance_id) DO UPDATE SET refreshed_at = now()
            """)
    }

    /// Removes the marks of `instance` for these users.
    static func unwatch(_ connection: PostgresConnection, users: [UUID], instance: UUID) throws {
        guard !users.isEmpty else { return }
        try connection.execute(
            "DELETE FROM live_streams WHERE instance_id = \(instance) AND user_id = ANY(\(PostgresArray(users.map(\.lowercasedText)))::uuid[])")
    }

    /// The latest event numbers of these users, and which of these sessions still exist (at `now`):
    /// ids as text both ways (`UUID.lowercasedText`), since a sweep of every stream of an instance
    /// passes thousands, and parsing them is most of its cost.
    static func sweep(_ connection: PostgresConnection, users: [String], sessions: [String], at now: Date) throws -> (
        latest: [String: Int64], liveSessions: Set<String>
    ) {
        var latest: [String: Int64] = [:]
        if !users.isEmpty {
            let rows = try connection.query(
                "SELECT id::text AS id, event_seq FROM users WHERE id = ANY(\(PostgresArray(users))::uuid[])")
            for row in rows { latest[try row.decode(String.self, column: "id")] = try row.decode(Int64.self, column: "event_seq") }
        }
        var live: Set<String> = []
        if !sessions.isEmpty {
            let rows = try connection.query(
                "SELECT id::text AS id FROM sessions WHERE id = ANY(\(PostgresArray(sessions))::uuid[]) AND expires_at > \(now)")
            for row in rows { live.insert(try row.decode(String.self, column: "id")) }
        }
        return (latest, live)
    }

    /// Deletes up to `limit` marks not refreshed for `olderThanSeconds` (an instance that died).
    static func purgeStaleWatches(_ connection: PostgresConnection, olderThanSeconds: Double, limit: Int) throws -> Int {
        try connection.execute(
            """
            DELETE FROM live_streams WHERE (user_id, instance_id) IN (
                SELECT user_id, instance_id FROM live_streams
                WHERE refreshed_at < now() - make_interval(secs => \(olderThanSeconds)) LIMIT \(limit))
            """)
    }

    /// Deletes up to `limit` events older than `olderThanSeconds`; returns how many.
    static func purge(_ connection: PostgresConnection, olderThanSeconds: Double, limit: Int) throws -> Int {
        try connection.execute(
            """
            DELETE FROM user_events WHERE (user_id, seq) IN (
                SELECT user_id, seq FROM user_events WHERE created_at < now() - make_interval(secs => \(olderThanSeconds)) LIMIT \(limit))
            """)
    }
}
