import Postgres

/// Failure counters in PostgreSQL, so every instance sees the same ones. A window opens at the
/// first failure and lasts `windowSeconds`; `limit` failures within it lock the key until it ends.
enum ThrottleRepository {
    /// Seconds until the key unlocks, or nil when it is not locked.
    static func lockedFor(_ connection: PostgresConnection, key: String, rule: ThrottleRule) throws -> Int? {
        let rows = try connection.query("""
            SELECT ceil(extract(epoch FROM window_start + make_interval(secs => \(rule.windowSeconds)) - now()))::bigint
            FROM auth_throttles
            WHERE key = \(key) AND failures >= \(rule.limit)
              AND window_start > now() - make_interval(secs => \(rule.windowSeconds))
            """)
        guard let row = rows.first else { return nil }
        return max(1, Int(try row.decode(Int64.self, at: 0)))
    }

    /// Counts one failure; returns the failures in the current window.
    @discardableResult
    static func recordFailure(_ connection: PostgresConnection, key: String, rule: ThrottleRule) throws -> Int {
        let rows = try connection.query("""
            INSERT INTO auth_throttles AS t (key, window_start, failures) VALUES (\(key), now(), 1)
            ON CONFLICT (key) DO UPDATE SET
                failures = CASE WHEN t.window_start <= now() - make_interval(secs => \(rule.windowSeconds)) THEN 1 ELSE t.failures + 1 END,
                window_start = CASE WHEN t.window_start <= now() - make_interval(secs => \(rule.windowSeconds)) THEN now() ELSE t.window_start END
            RETURNING failures
            """)
        return Int(try rows[0].decode(Int32.self, at: 0))
    }

    static func clear(_ connection: PostgresConnection, key: String) throws {
        try connection.execute("DELETE FROM auth_throttles WHERE key = \(key)")
    }
}

/// A throttle: `limit` failures within `windowSeconds` lock until the window ends.
public struct ThrottleRule: Sendable {
    public var limit: Int
    public var windowSeconds: Double

    public init(limit: Int, windowSeconds: Double) {
        self.limit = limit
        self.windowSeconds = windowSeconds
    }
}
