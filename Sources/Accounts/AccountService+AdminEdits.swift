import Cryptography
import FoundationEssentials
import JSON
import Postgres

/// What administrators change beyond a user's status: a profile (by the user's own rules), the
/// field schema, and what the console's dashboard counts.
extension AccountService {
    // MARK: - A user's profile

    /// `PATCH /admin/users/{id}`: the user's own `PATCH` rules (types, limits, `If-Match`, a new
    /// address applied at once and mailed), each statement committed together with its audit entry.
    public func adminPatchProfile(
        _ patch: ProfilePatch, of id: UUID, condition: WriteCondition, by admin: Admin, origin: RequestOrigin
    ) async throws -> User {
        guard let user = try context.pool.withConnection({ try UserRepository.find($0, id: id) }) else {
            throw AccountsError(.notFound, "There is no user with this id.")
        }
        let executor = AuditedExecutor(pool: context.pool) { connection in
            try AdminRepository.audit(connection, admin: admin, action: .userUpdate, target: id, address: origin.address)
        }
        do {
            return try await profiles.patchProfile(patch, of: user, condition: condition, addressChange: .atOnce, origin: origin, on: executor)
        } catch let error as AccountsError where error.code == .invalidToken {
            // The user was deleted between the read and the write.
            throw AccountsError(.notFound, "There is no user with this id.")
        }
    }

    // MARK: - The field schema

    /// Every custom field: its type, whether configuration or an administrator pinned it, and since when it exists.
    public func fieldSchema() throws -> [FieldDefinition] {
        try context.pool.withConnection { try FieldTypeRepository.definitions($0) }
    }

    /// `PUT /admin/schema/{field}`: fixes a field's type. A new name is created pinned; a known
    /// one is pinned, and when the type differs every stored value is converted to it in the same
    /// transaction, or the change is refused (`schema_conflict`) if one of them does not convert.
    public func pinFieldType(_ name: String, _ type: FieldType, by admin: Admin, origin: RequestOrigin) throws -> FieldDefinition {
        guard FieldSchema.isValidName(name) else {
            throw AccountsError.field("field", .invalidValue, "field names match ^[A-Za-z][A-Za-z0-9_]{0,63}$")
        }
        let limits = context.configuration.fieldLimits
        let definition = try context.pool.withTransaction { connection -> FieldDefinition in
            // Serialised with new names being claimed, and with other pins of this name.
            try connection.execute("SELECT pg_advisory_xact_lock(\(FieldTypeRepository.claimLockKey))")
            if let stored = try FieldTypeRepository.definitions(connection, name: name).first, stored.type != type {
                var converted: [User] = []
                var disagreeing = 0
                for var user in try FieldTypeRepository.holders(connection, of: name) {
                    guard let value = user.data[name], let canonical = type.canonical(value, limits: limits) else {
                        disagreeing += 1
                        continue
                    }
                    if canonical != value {
                        user.data[name] = canonical
                        converted.append(user)
                    }
                }
                guard disagreeing == 0 else {
                    throw AccountsError(
                        .schemaConflict,
                        "\(disagreeing) user\(disagreeing == 1 ? " holds a value" : "s hold values") of \(name) that \(disagreeing == 1 ? "is" : "are") not \(type.rawValue).",
                        fields: [AccountsError.FieldError(field: "type", code: .schemaConflict, detail: "stored values are not \(type.rawValue)")])
                }
                for user in converted { try UserRepository.setData(connection, id: user.id, data: user.data) }
            }
            let pinned = try FieldTypeRepository.pin(connection, name: name, type: type)
            try AdminRepository.audit(connection, admin: admin, action: .schemaPin(field: name, type: type), target: nil, address: origin.address)
            return pinned
        }
        context.schema.cached(name, definition.type)
        return definition
    }

    // MARK: - The dashboard

    /// Totals now, and sign-ups and sign-ins per UTC day over the last `days` days (today last).
    public func dashboard(days: Int = 30) throws -> Dashboard {
        try context.pool.withConnection { try AdminRepository.dashboard($0, days: days) }
    }
}

/// A custom field as administrators see it.
public struct FieldDefinition: Sendable, Equatable {
    public let name: String
    public let type: FieldType
    public let pinned: Bool
    public let createdAt: Date
}

/// The console's dashboard: totals, and a day-by-day series.
public struct Dashboard: Sendable {
    public struct Day: Sendable, Equatable {
        /// `YYYY-MM-DD`, UTC.
        public let date: String
        public let signUps: Int
        public let signIns: Int
    }

    public let users: Int
    public let disabledUsers: Int
    public let activeSessions: Int
    public let images: Int
    public let days: [Day]
}

/// Runs a service's statements on the pool with something more in each one's transaction: an
/// administrator's edit commits with its audit entry, or neither does.
struct AuditedExecutor: QueryExecutor {
    let pool: PostgresPool
    let alsoRun: (PostgresConnection) throws -> Void

    func read<Row>(_ query: PreparedQuery<Row>) async throws -> [Row] {
        try pool.withConnection { try $0.query(query) }
    }

    func write<Row>(_ query: PreparedQuery<Row>, lockOrder: String) async throws -> [Row] {
        try pool.withTransaction { connection in
            let rows = try connection.query(query)
            if !rows.isEmpty { try alsoRun(connection) }
            return rows
        }
    }

    func transaction<Value>(_ body: @escaping (PostgresConnection) throws -> Value) async throws -> Value {
        try pool.withTransaction { connection in
            let value = try body(connection)
            try alsoRun(connection)
            return value
        }
    }
}
