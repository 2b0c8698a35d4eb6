import Cryptography
import FoundationEssentials
import Postgres

/// The SQL of codes by mail (migration 0025): `email_codes`, one live code per address (sign-in)
/// or per user (reauthentication), kept only as the SHA-256 of its slot and digits, and
/// `email_code_requests`, the queue a sign-in's request writes whatever the address.
enum EmailCodeRepository {
    enum Purpose: String {
        case signIn = "sign_in"
        case reauthentication
    }

    /// A live code, locked until the transaction ends.
    struct Live {
        let id: Int64
        /// Nil: a code for an address no account held when it was made (`--email-code-signup`).
        let userID: UUID?
        /// Nil until its mail is sent.
        let codeHash: [UInt8]?
    }

    /// What a code's digits are kept as: SHA-256 of the slot's id and the digits, so that equal
    /// codes of two slots differ.
    static func hash(slot: Int64, code: String) -> [UInt8] {
        SHA256.hash(Array("\(slot):\(code)".utf8))
    }

    /// Queues a sign-in's request for `resolve` (registered address or not: the same statement).
    static func queueSignInRequest(
        _ connection: PostgresConnection, email: EmailAddress, signup: Bool, lifetimeSeconds: Double, at now: Date
    ) throws {
        try connection.execute(
            """
            INSERT INTO email_code_requests (email_normalized, email, signup, lifetime_seconds, requested_at)
            VALUES (\(email.normalized), \(email.value), \(signup), \(lifetimeSeconds), \(now))
            """)
    }

    /// Turns up to `limit` queued requests into slots and mail (`exo_resolve_email_codes`).
    static func resolveSignInRequests(_ connection: PostgresConnection, limit: Int) throws -> Int {
        Int(try connection.query("SELECT exo_resolve_email_codes(\(limit)::integer)")[0].decode(Int32.self, at: 0))
    }

    /// A reauthentication's slot for the user (replacing an older code); returns its id.
    static func insertReauthenticationSlot(
        _ connection: PostgresConnection, userID: UUID, email: EmailAddress, lifetimeSeconds: Double, at now: Date
    ) throws -> Int64 {
        try connection.execute("DELETE FROM email_codes WHERE purpose = 'reauthentication' AND user_id = \(userID)")
        return try connection.query(
            """
            INSERT INTO email_codes (purpose, email_normalized, user_id, created_at, expires_at)
            VALUES ('reauthentication', \(email.normalized), \(userID), \(now), \(now) + make_interval(secs => \(lifetimeSeconds)))
            RETURNING id
            """)[0].decode(Int64.self, at: 0)
    }

    /// Stores the hash of a new code in a slot still live (replacing the one of an earlier attempt
    /// at its mail, with its count of wrong tries); false when the slot is gone.
    static func mint(_ connection: PostgresConnection, slot: Int64, hash: [UInt8], at now: Date) throws -> Bool {
        try connection.execute("UPDATE email_codes SET code_hash = \(hash), failures = 0 WHERE id = \(slot) AND expires_at > \(now)") == 1
    }

    /// The live sign-in code of an address, locked.
    static func liveSignIn(_ connection: PostgresConnection, email: EmailAddress, at now: Date) throws -> Live? {
        let rows = try connection.query(
            """
            SELECT id, user_id, code_hash FROM email_codes
            WHERE purpose = 'sign_in' AND email_normalized = \(email.normalized) AND expires_at > \(now) FOR UPDATE
            """)
        return try live(rows)
    }

    /// The live reauthentication code of a user, locked.
    static func liveReauthentication(_ connection: PostgresConnection, userID: UUID, at now: Date) throws -> Live? {
        let rows = try connection.query(
            """
            SELECT id, user_id, code_hash FROM email_codes
            WHERE purpose = 'reauthentication' AND user_id = \(userID) AND expires_at > \(now) FOR UPDATE
            """)
        return try live(rows)
    }

    private static func live(_ rows: PostgresRows) throws -> Live? {
        try rows.first.map { row in
            Live(
                id: try row.decode(Int64.self, column: "id"), userID: try row.decode(UUID?.self, column: "user_id"),
                codeHash: try row.decode([UInt8]?.self, column: "code_hash"))
        }
    }

    /// Counts a wrong try; the code goes at `limit`.
    static func countFailure(_ connection: PostgresConnection, id: Int64, limit: Int) throws {
        let failures = try connection.query("UPDATE email_codes SET failures = failures + 1 WHERE id = \(id) RETURNING failures")
        if let count = try failures.first?.decode(Int32.self, at: 0), count >= limit { try delete(connection, id: id) }
    }

    static func delete(_ connection: PostgresConnection, id: Int64) throws {
        try connection.execute("DELETE FROM email_codes WHERE id = \(id)")
    }

    /// Deletes up to `limit` codes expired at `now`; returns how many.
    static func purgeExpired(_ connection: PostgresConnection, limit: Int, at now: Date) throws -> Int {
        try connection.execute(
            "DELETE FROM email_codes WHERE id IN (SELECT id FROM email_codes WHERE expires_at < \(now) LIMIT \(limit))")
    }
}
