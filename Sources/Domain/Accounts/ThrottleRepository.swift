import FoundationEssentials
import Postgres

/// Attempt counters in PostgreSQL, so every instance sees the same ones. A window opens at the
/// first attempt and lasts `windowSeconds`; `limit` attempts within it lock the key until it ends.
///
/// An attempt is counted *before* the work it guards (`acquire`), atomically for all of a
/// request's keys (`exo_throttle_acquire`, migrations 0003 and 0017): counting after the work let every
/// guess sent at once pass a check that none of them had been recorded in yet. A success then
/// gives its attempt back (`release`) or clears the key.
enum ThrottleRepository {
    /// Counts one attempt on every key at `now`, or none when any key is full: nil when counted,
    /// else the seconds until the longest of the full keys' windows ends. Rules with limit 0 are off.
    static func acquire(_ connection: PostgresConnection, _ keys: [(key: String, rule: ThrottleRule)], at now: Date) throws -> Int? {
        let active = keys.filter { $0.rule.limit > 0 }
        guard !active.isEmpty else { return nil }
        let rows = try connection.query(
            """
            SELECT exo_throttle_acquire(\(PostgresArray(active.map(\.key)))::text[],
                                        \(PostgresArray(active.map(\.rule.limit)))::integer[],
                                        \(PostgresArray(active.map(\.rule.windowSeconds)))::double precision[], \(now))
            """)
        let wait = Int(try rows[0].decode(Int32.self, at: 0))
        return wait > 0 ? wait : nil
    }

    /// Seconds until the key unlocks, or nil when it is not full (a read: counts nothing).
    static func lockedFor(_ connection: PostgresConnection, key: String, rule: ThrottleRule, at now: Date) throws -> Int? {
        let rows = try connection.query(
            """
            SELECT ceil(extract(epoch FROM window_start + make_interval(secs => \(rule.windowSeconds)) - \(now)))::bigint
            FROM auth_throttles
            WHERE key = \(key) AND failures >= \(rule.limit)
              AND window_start > \(now) - make_interval(secs => \(rule.windowSeconds))
            """)
        guard let row = rows.first else { return nil }
        return max(1, Int(try row.decode(Int64.self, at: 0)))
    }

    /// Gives back one attempt on each key: the attempt succeeded, or never ran. One row per
    /// statement, outside any transaction, so that it never holds one row while waiting for
    /// another (`exo_throttle_acquire` locks several, in key order).
    static func release(_ connection: PostgresConnection, keys: [String]) throws {
        for key in keys {
            try connection.execute("UPDATE auth_throttles SET failures = failures - 1 WHERE key = \(key) AND failures > 0")
        }
    }

    static func clear(_ connection: PostgresConnection, key: String) throws {
        try connection.execute("DELETE FROM auth_throttles WHERE key = \(key)")
    }

    /// Clears an email's sign-in throttles: its own, and those of each address with it.
    static func clearSignIn(_ connection: PostgresConnection, emailID: String) throws {
        try connection.execute(
            "DELETE FROM auth_throttles WHERE key = \("signin:email:" + emailID) OR starts_with(key, \("signin:pair:" + emailID + " "))")
    }

    /// Deletes up to `limit` rows whose window ended more than `olderThanSeconds` before `now`; returns how many.
    static func purge(_ connection: PostgresConnection, olderThanSeconds: Double, limit: Int, at now: Date) throws -> Int {
        try connection.execute(
            """
            DELETE FROM auth_throttles WHERE key IN (
                SELECT key FROM auth_throttles WHERE window_start < \(now) - make_interval(secs => \(olderThanSeconds)) LIMIT \(limit))
            """)
    }
}

/// A throttle: `limit` attempts within `windowSeconds` lock until the window ends; a limit of 0 turns it off.
public struct ThrottleRule: Sendable {
    public var limit: Int
    public var windowSeconds: Double

    public init(limit: Int, windowSeconds: Double) {
        self.limit = limit
        self.windowSeconds = windowSeconds
    }
}
