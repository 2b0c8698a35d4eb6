import FoundationEssentials
import Cryptography
import Postgres

/// The SQL of `security_events` (migrations 0004, 0011).
enum ActivityRepository {
    /// Records an event in the caller's transaction (or on its own); an administrator's leaves
    /// no address or device of the operator.
    static func record(
        _ connection: PostgresConnection, userID: UUID, _ kind: ActivityEvent.Kind, origin: RequestOrigin?, method: ActivityEvent.Method? = nil
    ) throws {
        let (address, agent, byAdministrator) = shown(origin)
        try connection.execute(
            """
            INSERT INTO security_events (user_id, type, ip_address, user_agent, by_administrator, method)
            VALUES (\(userID), \(kind.rawValue), \(address), \(agent), \(byAdministrator), \(method?.rawValue))
            """)
    }

    /// What an event keeps of its origin.
    private static func shown(_ origin: RequestOrigin?) -> (address: String?, agent: String?, byAdministrator: Bool) {
        guard let origin else { return (nil, nil, false) }
        return origin.byAdministrator ? (nil, nil, true) : (origin.address, origin.userAgent, false)
    }

    /// Records an event unless the user has one of its kind from the last `withinSeconds`: a
    /// lock-out is recorded when it begins, not for every attempt refused while it lasts, which
    /// an attacker could repeat without end.
    static func recordOnce(
        _ connection: PostgresConnection, userID: UUID, _ kind: ActivityEvent.Kind, origin: RequestOrigin?, withinSeconds: Double
    ) throws {
        let (address, agent, byAdministrator) = shown(origin)
        try connection.execute(
            """
            INSERT INTO security_events (user_id, type, ip_address, user_agent, by_administrator)
            SELECT \(userID), \(kind.rawValue), \(address), \(agent), \(byAdministrator)
            WHERE NOT EXISTS (
                SELECT 1 FROM security_events
                WHERE user_id = \(userID) AND type = \(kind.rawValue) AND at > now() - make_interval(secs => \(withinSeconds)))
            """)
    }

    /// A user's events newest first, after `cursor`, up to `limit` (one more tells whether a next page exists).
    static func page(_ connection: PostgresConnection, userID: UUID, after cursor: KeysetCursor?, limit: Int, retentionSeconds: Double) throws
        -> [ActivityEvent]
    {
        let rows: PostgresRows
        if let cursor {
            rows = try connection.query(
                """
                SELECT id, type, (extract(epoch FROM at) * 1000000)::bigint AS at_micros, ip_address, user_agent, by_administrator, method
                FROM security_events
                WHERE user_id = \(userID) AND at > now() - make_interval(secs => \(retentionSeconds))
                  AND (at, id) < ('epoch'::timestamptz + \(cursor.microseconds) * interval '1 microsecond', \(cursor.id))
                ORDER BY at DESC, id DESC LIMIT \(limit)
                """)
        } else {
            rows = try connection.query(
                """
                SELECT id, type, (extract(epoch FROM at) * 1000000)::bigint AS at_micros, ip_address, user_agent, by_administrator, method
                FROM security_events
                WHERE user_id = \(userID) AND at > now() - make_interval(secs => \(retentionSeconds))
                ORDER BY at DESC, id DESC LIMIT \(limit)
                """)
        }
        return try rows.compactMap { row in
            // A type this build does not know (a newer instance wrote it) is left out, not an error.
            guard let kind = ActivityEvent.Kind(rawValue: try row.decode(String.self, column: "type")) else { return nil }
            return ActivityEvent(
                id: try row.decode(UUID.self, column: "id"), kind: kind, atMicroseconds: try row.decode(Int64.self, column: "at_micros"),
                ipAddress: try row.decode(String?.self, column: "ip_address"), userAgent: try row.decode(String?.self, column: "user_agent"),
                byAdministrator: try row.decode(Bool.self, column: "by_administrator"),
                method: try row.decode(String?.self, column: "method").flatMap(ActivityEvent.Method.init))
        }
    }

    /// Deletes up to `limit` events older than `olderThanSeconds`; returns how many.
    static func purge(_ connection: PostgresConnection, olderThanSeconds: Double, limit: Int) throws -> Int {
        try connection.execute(
            """
            DELETE FROM security_events WHERE id IN (
                SELECT id FROM security_events WHERE at < now() - make_interval(secs => \(olderThanSeconds)) LIMIT \(limit))
            """)
    }
}
