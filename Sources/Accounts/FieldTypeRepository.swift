import Postgres

/// The deployment's custom field types. A type never changes once set, so instances may cache
/// what they have read.
enum FieldTypeRepository {
    static func all(_ connection: PostgresConnection) throws -> [String: FieldType] {
        var types: [String: FieldType] = [:]
        for row in try connection.query("SELECT name, type FROM field_types") {
            if let type = FieldType(rawValue: try row.decode(String.self, at: 1)) {
                types[try row.decode(String.self, at: 0)] = type
            }
        }
        return types
    }

    /// Sets the type of a new field unless another writer got there first; returns the type in
    /// force and whether this call inserted it (then it exists only if the caller's transaction commits).
    static func claim(_ connection: PostgresConnection, name: String, type: FieldType,
                      pinned: Bool = false) throws -> (type: FieldType, inserted: Bool) {
        let rows = try connection.query("""
            WITH inserted AS (
                INSERT INTO field_types (name, type, pinned) VALUES (\(name), \(type.rawValue), \(pinned))
                ON CONFLICT (name) DO NOTHING RETURNING type
            )
            SELECT type, true FROM inserted UNION ALL SELECT type, false FROM field_types WHERE name = \(name) LIMIT 1
            """)
        if let row = rows.first, let stored = FieldType(rawValue: try row.decode(String.self, at: 0)) {
            return (stored, try row.decode(Bool.self, at: 1))
        }
        // The competing insert was not yet visible to this statement's snapshot: read again.
        let again = try connection.query("SELECT type FROM field_types WHERE name = \(name)")
        guard let row = again.first, let stored = FieldType(rawValue: try row.decode(String.self, at: 0)) else {
            throw PostgresError(code: .queryFailed, context: "field type claim found no row")
        }
        return (stored, false)
    }
}
