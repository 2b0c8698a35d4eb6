import FoundationEssentials
import Postgres

/// The SQL of the second factor (migration 0024): the TOTP factor of a user or an
/// administrator, its recovery codes (hashes), and the challenges that finish a sign-in.
enum MFARepository {
    /// Whose factor it is.
    enum Owner: Equatable {
        case user(UUID)
        case admin(UUID)
    }

    struct Factor {
        let id: UUID
        let owner: Owner
        let secret: [UInt8]
        /// Nil while the enrolment waits for its first code.
        let enabledAt: Date?
        let lastUsedStep: Int64
    }

    /// A sign-in waiting for its second factor.
    struct Challenge {
        let factorID: UUID
        let method: String
        /// A reset's new password, applied with the code.
        let pendingPasswordHash: String?
        let failures: Int
    }

    private static let factorColumns = "id, user_id, admin_id, secret, enabled_at, last_used_step"

    private static func decodeFactor(_ row: PostgresRow) throws -> Factor {
        let owner: Owner
        if let user = try row.decode(UUID?.self, column: "user_id") {
            owner = .user(user)
        } else {
            owner = .admin(try row.decode(UUID.self, column: "admin_id"))
        }
        return Factor(
            id: try row.decode(UUID.self, column: "id"), owner: owner, secret: try row.decode([UInt8].self, column: "secret"),
            enabledAt: try row.decode(Date?.self, column: "enabled_at"), lastUsedStep: try row.decode(Int64.self, column: "last_used_step"))
    }

    static func factor(_ connection: PostgresConnection, of owner: Owner, forUpdate: Bool = false) throws -> Factor? {
        let lock = forUpdate ? " FOR UPDATE" : ""
        switch owner {
        case .user(let id):
            return try connection.query("SELECT \(unsafeRaw: factorColumns) FROM mfa_factors WHERE user_id = \(id)\(unsafeRaw: lock)").first.map(
                decodeFactor)
        case .admin(let id):
            return try connection.query("SELECT \(unsafeRaw: factorColumns) FROM mfa_factors WHERE admin_id = \(id)\(unsafeRaw: lock)").first.map(
                decodeFactor)
        }
    }

    static func factor(_ connection: PostgresConnection, id: UUID) throws -> Factor? {
        try connection.query("SELECT \(unsafeRaw: factorColumns) FROM mfa_factors WHERE id = \(id)").first.map(decodeFactor)
    }

    /// When the owner's factor was turned on, or nil when none is on.
    static func enabledAt(_ connection: PostgresConnection, of owner: Owner) throws -> Date? {
        try factor(connection, of: owner)?.enabledAt
    }

    /// A new secret for an enrolment, replacing one that waits for its first code; nil when the
    /// owner's factor is on already.
    static func startEnrolment(_ connection: PostgresConnection, of owner: Owner, secret: [UInt8], at now: Date) throws -> UUID? {
        let (userID, adminID): (UUID?, UUID?)
        switch owner {
        case .user(let id): (userID, adminID) = (id, nil)
        case .admin(let id): (userID, adminID) = (nil, id)
        }
        let conflict = userID != nil ? "user_id" : "admin_id"
        return try connection.query(
            """
            INSERT INTO mfa_factors (user_id, admin_id, secret, created_at) VALUES (\(userID), \(adminID), \(secret), \(now))
            ON CONFLICT (\(unsafeRaw: conflict)) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at, last_used_step = 0
            WHERE mfa_factors.enabled_at IS NULL
            RETURNING id
            """
        ).first.map { try $0.decode(UUID.self, at: 0) }
    }

    /// Records that a code of `step` was accepted; false when one of this step or a later one
    /// was (a replay, or a race another request won).
    static func useStep(_ connection: PostgresConnection, factorID: UUID, step: Int64) throws -> Bool {
        try connection.execute("UPDATE mfa_factors SET last_used_step = \(step) WHERE id = \(factorID) AND last_used_step < \(step)") == 1
    }

    static func enable(_ connection: PostgresConnection, factorID: UUID, at now: Date) throws -> Bool {
        try connection.execute("UPDATE mfa_factors SET enabled_at = \(now) WHERE id = \(factorID) AND enabled_at IS NULL") == 1
    }

    /// Turns the owner's factor off: the factor, its codes and its challenges go. False when none
    /// was on (an enrolment waiting for its first code stays, to be replaced by the next start).
    static func delete(_ connection: PostgresConnection, of owner: Owner) throws -> Bool {
        switch owner {
        case .user(let id): try connection.execute("DELETE FROM mfa_factors WHERE user_id = \(id) AND enabled_at IS NOT NULL") == 1
        case .admin(let id): try connection.execute("DELETE FROM mfa_factors WHERE admin_id = \(id) AND enabled_at IS NOT NULL") == 1
        }
    }

    /// The factor's recovery codes become `hashes`: the older ones are void.
    static func replaceRecoveryCodes(_ connection: PostgresConnection, factorID: UUID, hashes: [[UInt8]]) throws {
        try connection.execute("DELETE FROM mfa_recovery_codes WHERE factor_id = \(factorID)")
        for hash in hashes {
            try connection.execute("INSERT INTO mfa_recovery_codes (factor_id, code_hash) VALUES (\(factorID), \(hash))")
        }
    }

    /// Uses an unused recovery code up; false when it is not one of the factor's, or was used.
    static func useRecoveryCode(_ connection: PostgresConnection, factorID: UUID, hash: [UInt8], at now: Date) throws -> Bool {
        try connection.execute(
            "UPDATE mfa_recovery_codes SET used_at = \(now) WHERE factor_id = \(factorID) AND code_hash = \(hash) AND used_at IS NULL") == 1
    }

    static func recoveryCodesLeft(_ connection: PostgresConnection, factorID: UUID) throws -> Int {
        Int(
            try connection.query("SELECT count(*) FROM mfa_recovery_codes WHERE factor_id = \(factorID) AND used_at IS NULL")[0].decode(
                Int64.self, at: 0))
    }

    // MARK: - Challenges

    static func insertChallenge(
        _ connection: PostgresConnection, tokenHash: [UInt8], factorID: UUID, method: String, pendingPasswordHash: String?, expiresAt: Date,
        at now: Date
    ) throws {
        try connection.execute(
            """
            INSERT INTO mfa_challenges (token_hash, factor_id, method, pending_password_hash, created_at, expires_at)
            VALUES (\(tokenHash), \(factorID), \(method), \(pendingPasswordHash), \(now), \(expiresAt))
            """)
    }

    /// A live challenge, locked for the rest of the transaction (two codes sent with one token
    /// are judged one after the other).
    static func challenge(_ connection: PostgresConnection, tokenHash: [UInt8], at now: Date) throws -> Challenge? {
        try connection.query(
            """
            SELECT factor_id, method, pending_password_hash, failures FROM mfa_challenges
            WHERE token_hash = \(tokenHash) AND expires_at > \(now) FOR UPDATE
            """
        ).first.map { row in
            Challenge(
                factorID: try row.decode(UUID.self, column: "factor_id"), method: try row.decode(String.self, column: "method"),
                pendingPasswordHash: try row.decode(String?.self, column: "pending_password_hash"),
                failures: Int(try row.decode(Int32.self, column: "failures")))
        }
    }

    /// The user a live challenge belongs to (a read: the route's per-user throttle counts it).
    static func challengeUser(_ connection: PostgresConnection, tokenHash: [UInt8], at now: Date) throws -> UUID? {
        try connection.query(
            """
            SELECT f.user_id FROM mfa_challenges c JOIN mfa_factors f ON f.id = c.factor_id
            WHERE c.token_hash = \(tokenHash) AND c.expires_at > \(now)
            """
        ).first.flatMap { try $0.decode(UUID?.self, at: 0) }
    }

    static func deleteChallenge(_ connection: PostgresConnection, tokenHash: [UInt8]) throws {
        try connection.execute("DELETE FROM mfa_challenges WHERE token_hash = \(tokenHash)")
    }

    /// Counts a wrong code; returns the failures so far.
    static func countFailure(_ connection: PostgresConnection, tokenHash: [UInt8]) throws -> Int {
        Int(
            try connection.query("UPDATE mfa_challenges SET failures = failures + 1 WHERE token_hash = \(tokenHash) RETURNING failures")[0]
                .decode(Int32.self, at: 0))
    }

    /// Deletes up to `limit` challenges expired at `now`.
    static func purgeExpiredChallenges(_ connection: PostgresConnection, limit: Int, at now: Date) throws -> Int {
        try connection.execute(
            "DELETE FROM mfa_challenges WHERE token_hash IN (SELECT token_hash FROM mfa_challenges WHERE expires_at < \(now) LIMIT \(limit))")
    }
}
