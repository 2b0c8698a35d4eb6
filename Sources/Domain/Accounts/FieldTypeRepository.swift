import FoundationEssentials
import Postgres

/// The deployment's custom field types. A type never changes once set, so instances may cache
/// what they have read.
enum FieldTypeRepository {
    static func all(_ connection: PostgresConnection) throws -> [String: FieldType] {
        var types: [String: FieldType] = [:]
        for row in try connection.query("SELECT name, type FROM field_types") {
            if let type = FieldType(rawValue: try row.decode(String.self, column: "type")) {
                types[try row.decode(String.self, column: "name")] = type
            }
        }
        return types
    }

    /// Advisory lock key serialising the claims of new names ("exo-ft" in ASCII), so that the
    /// count that caps them is exact when transactions claim at once.
    static let claimLockKey: Int64 = 0x6578_6F2D_6674

    /// Sets the type of a new field unless another writer got there first; returns the type in
    /// force and whether this call inserted it (then it exists only if the caller's transaction
    /// commits), or nil when the name is new and the deployment already has `maxNames` names.
    static func claim(
        _ connection: PostgresConnection, name: String, type: FieldType,
        pinned: Bool = false, maxNames: Int = .max
    ) throws -> (type: FieldType, inserted: Bool)? {
        if maxNames < .max {
            try connection.execute("SELECT pg_advisory_xact_lock(\(claimLockKey))")
        }
        let rows = try connection.query(
            """
            WITH inserted AS (
                INSERT INTO field_types (name, type, pinned)
                SELECT \(name), \(type.rawValue), \(pinned) WHERE (SELECT count(*) FROM field_types) < \(Int64(min(maxNames, Int(Int32.max))))
                ON CONFLICT (name) DO NOTHING RETURNING type
            )
            SELECT type, true AS inserted FROM inserted UNION ALL SELECT type, false FROM field_types WHERE name = \(name) LIMIT 1
            """)
        if let row = rows.first, let stored = FieldType(rawValue: try row.decode(String.self, column: "type")) {
            return (stored, try row.decode(Bool.self, column: "inserted"))
        }
        // The competing insert was not yet visible to this statement's snapshot, or the cap held: read again.
        let again = try connection.query("SELECT type FROM field_types WHERE name = \(name)")
        guard let row = again.first else { return nil }
        guard let stored = FieldType(rawValue: try row.decode(String.self, column: "type")) else {
            throw PostgresError(code: .decodingFailed, columnName: "type", context: "unknown field type")
        }
        return (stored, false)
    }

    static func definitions(_ connection: PostgresConnection, name: String? = nil) throws -> [FieldDefinition] {
        try connection.query(
            """
            SELECT name, type, pinned, created_at FROM field_types
            WHERE \(name)::text IS NULL OR name = \(name) ORDER BY name
            """
        ).compactMap(decodeDefinition)
    }

    static func decodeDefinition(_ row: PostgresRow) throws -> FieldDefinition? {
        guard let type = FieldType(rawValue: try row.decode(String.self, column: "type")) else { return nil }
        return FieldDefinition(
            name: try row.decode(String.self, column: "name"), type: type, pinned: try row.decode(Bool.self, column: "pinned"),
            createdAt: try row.decode(Date.self, column: "created_at"))
    }

    /// The users holding a value for the field, locked until the caller's transaction ends.
    static func holders(_ connection: PostgresConnection, of name: String) throws -> [User] {
        try connection.query("SELECT \(UserRepository.columns) FROM users u WHERE u.data ? \(name) FOR UPDATE").map { try UserRepository.decode($0) }
    }

    /// Sets the type and pins it, creating the name if it is new; the field as it is now.
    static func pin(_ connection: PostgresConnection, name: String, type: FieldType) throws -> FieldDefinition {
        try decodeDefinition(
            connection.query(
                """
                INSERT INTO field_types (name, type, pinned) VALUES (\(name), \(type.rawValue), true)
                ON CONFLICT (name) DO UPDATE SET type = excluded.type, pinned = true
                RETURNING name, type, pinned, created_at
                """)[0])!
    }
}
