import Cryptography
import FoundationEssentials
import JSON
import Postgres

/// What administrators do, each action recorded in the audit log: find and view users, disable,
/// delete or sign them out, mail them a reset link, edit a profile (by the user's own rules), pin
/// the field schema, and read what the console's dashboard counts.
public final class Administration: Sendable {
    private let context: AccountsContext
    private let profiles: Profiles
    private let recovery: Recovery

    init(context: AccountsContext, profiles: Profiles, recovery: Recovery) {
        self.context = context
        self.profiles = profiles
        self.recovery = recovery
    }

    // MARK: - The audit log

    /// Records an action; the request fails if it cannot be recorded.
    public func audit(_ admin: Admin, _ action: AuditAction, target: UUID? = nil, origin: RequestOrigin) throws {
        try context.pool.withConnection { try AdminRepository.audit($0, admin: admin, action: action, target: target, address: origin.address) }
    }

    /// Newest first; `next` is the id to page from.
    public func auditPage(before id: Int64?, limit: Int) throws -> (entries: [AuditEntry], next: Int64?) {
        let rows = try context.pool.withConnection { try AdminRepository.auditPage($0, before: id, limit: limit + 1) }
        let entries = Array(rows.prefix(limit))
        return (entries, rows.count > limit ? entries.last?.id : nil)
    }

    /// Records a command of `exosphere admin` or `exosphere keys` in the audit log, as run by
    /// `operatorName` (the operating-system user); the command fails if it cannot be recorded.
    public static func auditCommand(_ action: AuditAction, by operatorName: String, on pool: PostgresPool) throws {
        try pool.withConnection { try AdminRepository.auditCommand($0, operator: operatorName, action: action) }
    }

    // MARK: - Users

    /// Users whose email contains a text and whose custom fields hold the given typed values,
    /// newest first. A field that does not exist is `unknown_field`; a value that does not parse
    /// as the field's type is `invalid_type`.
    public func searchUsers(_ search: UserSearch, after cursor: KeysetCursor?, limit: Int) throws -> AdminUserPage {
        // PostgreSQL text holds no U+0000, and no email is longer than 254 bytes.
        if let text = search.emailContains, text.utf8.count > 254 || text.contains("\u{0}") {
            throw AccountsError.invalid([AccountsError.FieldError(field: "q", code: .invalidValue, detail: "at most 254 bytes, no U+0000")])
        }
        for (name, value) in search.fields where value.contains("\u{0}") || value.utf8.count > 4096 {
            throw AccountsError.invalid([
                AccountsError.FieldError(field: "field." + name, code: .invalidValue, detail: "at most 4096 bytes, no U+0000")
            ])
        }
        var containment: String?
        if !search.fields.isEmpty {
            let types = try profiles.fieldTypes()
            var object = JSONObject()
            var problems: [AccountsError.FieldError] = []
            for (name, text) in search.fields {
                let path = "field." + name
                guard let type = types[name] else {
                    problems.append(AccountsError.FieldError(field: path, code: .unknownField, detail: "no user has a field named \(name)"))
                    continue
                }
                guard let value = Administration.typedValue(text, type, limits: context.configuration.fieldLimits) else {
                    problems.append(AccountsError.FieldError(field: path, code: .invalidType, detail: "expected \(type.rawValue)"))
                    continue
                }
                object[name] = value
            }
            if !problems.isEmpty { throw AccountsError.invalid(problems) }
            var writer = JSONWriter()
            writer.value(.object(object))
            containment = String(decoding: writer.bytes, as: UTF8.self)
        }
        let email = search.emailContains.map { $0.lowercased() }.flatMap { $0.isEmpty ? nil : $0 }
        // Planned for each search's own values: a plan cached for one field's rare value (read the
        // matches from the GIN index, then sort) is 50× slower for a common one, where walking the
        // newest-first index until the page is full is right (bench/admin-search.sh measured both).
        let rows = try context.pool.withTransaction { connection in
            try connection.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            return try AdminRepository.search(
                connection, emailContains: email, containment: containment, guest: search.guest, after: cursor, limit: limit + 1)
        }
        let users = Array(rows.prefix(limit))
        let next = rows.count > limit ? users.last.map { KeysetCursor(microseconds: $0.1, id: $0.0.user.id) } : nil
        return AdminUserPage(users: users.map(\.0), next: next)
    }

    /// A query parameter's text as a value of the field's type, or nil.
    static func typedValue(_ text: String, _ type: FieldType, limits: CustomFieldLimits) -> JSONValue? {
        let literal: JSONValue?
        switch type {
        case .string, .date, .datetime: literal = .string(text)
        case .boolean: literal = text == "true" ? .bool(true) : text == "false" ? .bool(false) : nil
        case .integer, .double:
            literal = (try? JSONParser.parse(text, limits: JSONLimits(maxDepth: 1, maxBytes: 64, maxNumberLength: 64))).flatMap {
                if case .number = $0 { $0 } else { nil }
            }
        }
        return literal.flatMap { type.canonical($0, limits: limits) }
    }

    public func adminView(of id: UUID) throws -> AdminUserView {
        guard let view = try context.pool.withConnection({ try AdminRepository.view($0, id: id) }) else {
            throw AccountsError(.notFound, "There is no user with this id.")
        }
        return view
    }

    /// Disables a user (every session ends at once) or enables them again, and records it.
    public func setDisabled(_ id: UUID, _ disabled: Bool, by admin: Admin, origin: RequestOrigin) throws {
        let found = try context.pool.withTransaction { connection in
            guard try AdminRepository.setDisabled(connection, id: id, disabled: disabled) else { return false }
            try AdminRepository.audit(
                connection, admin: admin, action: disabled ? .userDisable : .userEnable, target: id, address: origin.address)
            return true
        }
        guard found else { throw AccountsError(.notFound, "There is no user with this id.") }
    }

    // MARK: - An administrator's actions on a user

    /// Deletes a user with everything of theirs (`alsoDelete` runs in the same transaction, for the
    /// image rows), and records it.
    public func adminDeleteUser(_ id: UUID, by admin: Admin, origin: RequestOrigin, alsoDelete: (PostgresConnection) throws -> Void) throws {
        let found = try context.pool.withTransaction { connection in
            guard try UserRepository.find(connection, id: id, forUpdate: true) != nil else { return false }
            try alsoDelete(connection)
            _ = try UserRepository.delete(connection, id: id)
            try ThrottleRepository.clear(connection, key: ThrottleKey(.passwordCheck, .user(id)))
            try AdminRepository.audit(connection, admin: admin, action: .userDelete, target: id, address: origin.address)
            return true
        }
        guard found else { throw AccountsError(.notFound, "There is no user with this id.") }
        SecurityEvent.log(context.logger, .accountDeleted, outcome: .success, userID: id, origin: origin, detail: "by an administrator")
    }

    /// Ends one session of a user (`sessionID`), or all of them; the number ended.
    @discardableResult
    public func adminRevokeSessions(of userID: UUID, sessionID: UUID?, by admin: Admin, origin: RequestOrigin) throws -> Int {
        let ended = try context.pool.withTransaction { connection -> Int? in
            guard try UserRepository.find(connection, id: userID) != nil else { return nil }
            let ended: Int
            if let sessionID {
                guard try SessionRepository.delete(connection, id: sessionID, userID: userID) else { return -1 }
                ended = 1
            } else {
                ended = try connection.execute("DELETE FROM sessions WHERE user_id = \(userID)")
            }
            try ActivityRepository.record(connection, userID: userID, .sessionRevoked, origin: origin)
            try AdminRepository.audit(
                connection, admin: admin, action: sessionID == nil ? .userSessionsRevokeAll : .userSessionRevoke, target: userID,
                address: origin.address)
            return ended
        }
        guard let ended else { throw AccountsError(.notFound, "There is no user with this id.") }
        guard ended >= 0 else { throw AccountsError(.notFound, "No such session.") }
        return ended
    }

    /// Mails the user a password reset link, as `POST /users/password-reset` does, and records it.
    public func adminSendPasswordReset(_ userID: UUID, by admin: Admin, origin: RequestOrigin) throws {
        let user = try adminView(of: userID).user
        guard let text = user.email else { throw AccountsError(.noAddress, "The account has no address to mail.") }
        guard let email = EmailAddress(text) else { throw AccountsError(.invalidEmail, "The user's stored address is not valid.") }
        try recovery.requestPasswordReset(email: email, origin: origin)
        try audit(admin, .userPasswordReset, target: userID, origin: origin)
    }

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
    /// Accounts made by `POST /users/guest` that have no way back in yet.
    public let guests: Int
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
