import FoundationEssentials
import Postgres

/// The SQL of linked identities (`identities`); every value is a bound parameter.
enum IdentityRepository {
    private static let columns = "id, provider, email, created_at, last_used_at"

    private static func decode(_ row: PostgresRow) throws -> LinkedIdentity {
        let providerText = try row.decode(String.self, column: "provider")
        guard let provider = IdentityProvider(rawValue: providerText) else {
            throw PostgresError(code: .decodingFailed, columnName: "provider", context: "unknown provider \(providerText)")
        }
        return LinkedIdentity(
            id: try row.decode(UUID.self, column: "id"), provider: provider, email: try row.decode(String?.self, column: "email"),
            createdAt: try row.decode(Date.self, column: "created_at"), lastUsedAt: try row.decode(Date?.self, column: "last_used_at"))
    }

    /// The account the identity is linked to, marking it used.
    static func use(_ connection: PostgresConnection, provider: IdentityProvider, subject: String) throws -> UUID? {
        let rows = try connection.query(
            """
            UPDATE identities SET last_used_at = now()
            WHERE provider = \(provider.rawValue) AND subject = \(subject) RETURNING user_id
            """)
        return try rows.first.map { try $0.decode(UUID.self, column: "user_id") }
    }

    /// Links the identity to `userID`; nil when the identity is linked already (to anyone).
    static func insert(_ connection: PostgresConnection, userID: UUID, _ identity: ProviderIdentity, used: Bool) throws -> LinkedIdentity? {
        let rows = try connection.query(
            """
            INSERT INTO identities (user_id, provider, subject, email, last_used_at)
            VALUES (\(userID), \(identity.provider.rawValue), \(identity.subject), \(identity.email), CASE WHEN \(used) THEN now() END)
            ON CONFLICT (provider, subject) DO NOTHING
            RETURNING \(unsafeRaw: columns)
            """)
        return try rows.first.map(decode)
    }

    static func list(_ connection: PostgresConnection, userID: UUID) throws -> [LinkedIdentity] {
        try connection.query("SELECT \(unsafeRaw: columns) FROM identities WHERE user_id = \(userID) ORDER BY created_at, id").map(decode)
    }

    /// The account an identity is linked to, and the link.
    static func find(_ connection: PostgresConnection, provider: IdentityProvider, subject: String) throws -> (UUID, LinkedIdentity)? {
        try connection.query("SELECT user_id, \(unsafeRaw: columns) FROM identities WHERE provider = \(provider.rawValue) AND subject = \(subject)")
            .first.map { (try $0.decode(UUID.self, column: "user_id"), try decode($0)) }
    }

    static func delete(_ connection: PostgresConnection, id: UUID, userID: UUID) throws -> LinkedIdentity? {
        try connection.query("DELETE FROM identities WHERE id = \(id) AND user_id = \(userID) RETURNING \(unsafeRaw: columns)")
            .first.map(decode)
    }

    /// Deletes the user's identities added while the account's address was unverified (migration
    /// 0021 flags them as they are made); returns how many.
    static func deleteAddedWhileUnverified(_ connection: PostgresConnection, userID: UUID) throws -> Int {
        try connection.execute("DELETE FROM identities WHERE user_id = \(userID) AND added_while_unverified")
    }
}
