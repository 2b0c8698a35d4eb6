import FoundationEssentials
import Postgres

/// Attempt counters in PostgreSQL, so every instance sees the same ones. A window opens at the
/// first attempt and lasts `windowSeconds`; `limit` attempts within it lock the key until it ends.
///
/// An attempt is counted *before* the work it guards (`acquire`), atomically for all of a
/// request's keys (`exo_throttle_acquire`, migrations 0003 and 0017): counting after the work let every
/// guess sent at once pass a check that none of them had been recorded in yet. A success then
/// gives its attempt back (`release`) or clears the key. `Throttles` runs these for the route table.
enum ThrottleRepository {
    /// Counts one attempt on every key at `now`, or none when any key is full: 0 when counted,
    /// else the seconds until the longest of the full keys' windows ends.
    static func acquire(_ keys: [(key: String, rule: ThrottleRule)], at now: Date) -> PreparedQuery<Int32> {
        var binds = PostgresBindings()
        binds.append(PostgresArray(keys.map(\.key)))
        binds.append(PostgresArray(keys.map(\.rule.limit)))
        binds.append(PostgresArray(keys.map(\.rule.windowSeconds)))
        binds.append(now)
        return PreparedQuery(acquireStatement, binds) { try $0.decode(Int32.self, at: 0) }
    }

    private static let acquireStatement = PostgresStatement(
        unsafeSQL: "SELECT exo_throttle_acquire($1::text[], $2::integer[], $3::double precision[], $4)")

    /// Seconds until the key unlocks at `now`, or nothing when it is not full (a read: counts nothing).
    static func lockedFor(_ key: String, rule: ThrottleRule, at now: Date) -> PreparedQuery<Int64> {
        var binds = PostgresBindings()
        binds.append(key)
        binds.append(rule.limit)
        binds.append(rule.windowSeconds)
        binds.append(now)
        return PreparedQuery(lockedForStatement, binds) { try $0.decode(Int64.self, at: 0) }
    }

    private static let lockedForStatement = PostgresStatement(
        unsafeSQL: """
            SELECT greatest(1, ceil(extract(epoch FROM window_start + make_interval(secs => $3) - $4)))::bigint
            FROM auth_throttles
            WHERE key = $1 AND failures >= $2 AND window_start > $4 - make_interval(secs => $3)
            """)

    /// Gives back one attempt on `key`: the attempt succeeded, or was never judged. One key per
    /// statement, outside any transaction, so that it never holds one row while waiting for
    /// another (`exo_throttle_acquire` locks several, in key order).
    static func release(_ key: String) -> PreparedQuery<Void> {
        var binds = PostgresBindings()
        binds.append(key)
        return PreparedQuery(releaseStatement, binds) { _ in () }
    }

    private static let releaseStatement = PostgresStatement(
        unsafeSQL: "UPDATE auth_throttles SET failures = failures - 1 WHERE key = $1 AND failures > 0")

    static func clear(_ key: String) -> PreparedQuery<Void> {
        var binds = PostgresBindings()
        binds.append(key)
        return PreparedQuery(clearStatement, binds) { _ in () }
    }

    private static let clearStatement = PostgresStatement(unsafeSQL: "DELETE FROM auth_throttles WHERE key = $1")

    static func clear(_ connection: PostgresConnection, key: ThrottleKey) throws {
        _ = try connection.query(clear(key.text))
    }

    /// Clears an email's sign-in throttles: its own, and those of each address with it.
    static func clearSignIn(_ connection: PostgresConnection, emailID: String) throws {
        let email = ThrottleKey(.signIn, .email(emailID)).text
        let pairs = ThrottleKey(.signIn, .emailAndAddress(email: emailID, address: "")).text
        try connection.execute("DELETE FROM auth_throttles WHERE key = \(email) OR starts_with(key, \(pairs))")
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
