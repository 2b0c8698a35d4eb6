import FoundationEssentials
import Postgres

/// The SQL of passkeys and WebAuthn challenges; every value is a bound parameter.
enum PasskeyRepository {
    private static let columns = "id, name, credential_id, transports, backed_up, created_at, last_used_at"

    private static func decode(_ row: PostgresRow) throws -> Passkey {
        Passkey(
            id: try row.decode(UUID.self, column: "id"), name: try row.decode(String.self, column: "name"),
            credentialID: try row.decode([UInt8].self, column: "credential_id"),
            transports: try row.decode(String.self, column: "transports").split(separator: ",").map(String.init),
            backedUp: try row.decode(Bool.self, column: "backed_up"), createdAt: try row.decode(Date.self, column: "created_at"),
            lastUsedAt: try row.decode(Date?.self, column: "last_used_at"))
    }

    enum Purpose: String {
        case registration, authentication
    }

    /// Keeps a challenge's hash for `lifetimeSeconds` from `now` (and clears some that expired).
    static func insertChallenge(
        _ connection: PostgresConnection, hash: [UInt8], purpose: Purpose, userID: UUID?, lifetimeSeconds: Double, at now: Date
    ) throws {
        try connection.execute(
            """
            WITH expired AS (
                DELETE FROM webauthn_challenges WHERE challenge_hash IN (
                    SELECT challenge_hash FROM webauthn_challenges WHERE expires_at < \(now) LIMIT 100))
            INSERT INTO webauthn_challenges (challenge_hash, purpose, user_id, expires_at)
            VALUES (\(hash), \(purpose.rawValue), \(userID), \(now) + make_interval(secs => \(lifetimeSeconds)))
            """)
    }

    /// Uses a challenge up: true when it was live at `now`, of this purpose, and (for a registration) the user's.
    static func consumeChallenge(_ connection: PostgresConnection, hash: [UInt8], purpose: Purpose, userID: UUID?, at now: Date) throws -> Bool {
        try !connection.query(
            """
            DELETE FROM webauthn_challenges
            WHERE challenge_hash = \(hash) AND purpose = \(purpose.rawValue) AND expires_at > \(now)
              AND user_id IS NOT DISTINCT FROM \(userID)
            RETURNING 1
            """
        ).isEmpty
    }

    static func insert(
        _ connection: PostgresConnection, userID: UUID, credentialID: [UInt8], publicKey: [UInt8], signCount: UInt32, name: String,
        aaguid: [UInt8], transports: [String], backupEligible: Bool, backedUp: Bool
    ) throws -> Passkey? {
        try connection.query(
            """
            INSERT INTO passkeys (user_id, credential_id, public_key, sign_count, name, aaguid, transports, backup_eligible, backed_up)
            VALUES (\(userID), \(credentialID), \(publicKey), \(Int64(signCount)), \(name), \(aaguid), \(transports.joined(separator: ",")),
                    \(backupEligible), \(backedUp))
            ON CONFLICT (credential_id) DO NOTHING
            RETURNING \(unsafeRaw: columns)
            """
        ).first.map(decode)
    }

    static func list(_ connection: PostgresConnection, userID: UUID) throws -> [Passkey] {
        try connection.query("SELECT \(unsafeRaw: columns) FROM passkeys WHERE user_id = \(userID) ORDER BY created_at, id").map(decode)
    }

    /// What a sign-in needs of the credential: its passkey, user, key and counter.
    static func credential(_ connection: PostgresConnection, id credentialID: [UInt8]) throws
        -> (id: UUID, userID: UUID, publicKey: [UInt8], signCount: UInt32)?
    {
        try connection.query("SELECT id, user_id, public_key, sign_count FROM passkeys WHERE credential_id = \(credentialID)").first.map {
            (
                try $0.decode(UUID.self, column: "id"), try $0.decode(UUID.self, column: "user_id"),
                try $0.decode([UInt8].self, column: "public_key"), UInt32(clamping: try $0.decode(Int64.self, column: "sign_count"))
            )
        }
    }

    /// Records a use; false when another use moved the counter first (the same assertion, or a clone's, raced this one).
    static func use(_ connection: PostgresConnection, id: UUID, from stored: UInt32, to count: UInt32, backedUp: Bool) throws -> Bool {
        try !connection.query(
            """
            UPDATE passkeys SET sign_count = \(Int64(count)), backed_up = \(backedUp), last_used_at = now()
            WHERE id = \(id) AND sign_count = \(Int64(stored)) RETURNING 1
            """
        ).isEmpty
    }

    static func rename(_ connection: PostgresConnection, id: UUID, userID: UUID, name: String) throws -> Passkey? {
        try connection.query("UPDATE passkeys SET name = \(name) WHERE id = \(id) AND user_id = \(userID) RETURNING \(unsafeRaw: columns)")
            .first.map(decode)
    }

    static func delete(_ connection: PostgresConnection, id: UUID, userID: UUID) throws -> Passkey? {
        try connection.query("DELETE FROM passkeys WHERE id = \(id) AND user_id = \(userID) RETURNING \(unsafeRaw: columns)").first.map(decode)
    }

    /// Deletes the user's passkeys added while the account's address was unverified (migration
    /// 0021 flags them as they are made); returns how many.
    static func deleteAddedWhileUnverified(_ connection: PostgresConnection, userID: UUID) throws -> Int {
        try connection.execute("DELETE FROM passkeys WHERE user_id = \(userID) AND added_while_unverified")
    }
}
