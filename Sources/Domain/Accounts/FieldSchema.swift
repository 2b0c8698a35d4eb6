import JSON
import Postgres
import Synchronization

/// The deployment's custom field types, cached, so that only names not seen yet cost a query. A
/// type changes only when an administrator pins another one (`PUT /admin/schema/{field}`, which
/// converts every stored value); other instances read it within `fieldTypeRefreshSeconds`.
public final class FieldSchema: Sendable {
    public let limits: CustomFieldLimits
    private let cache = Mutex<[String: FieldType]>([:])
    /// With `limits.schemaLocked`, the names the field configuration pins: the only ones writable.
    private let writable = Mutex<Set<String>>([])

    public init(limits: CustomFieldLimits = CustomFieldLimits()) {
        self.limits = limits
    }

    /// Every known field type, read from the database.
    public func all(_ connection: PostgresConnection) throws -> [String: FieldType] {
        let types = try FieldTypeRepository.all(connection)
        cache.withLock { $0.merge(types) { current, _ in current } }
        return types
    }

    /// Reads every type again, replacing what is cached: an administrator may have changed one
    /// through another instance.
    public func refresh(_ connection: PostgresConnection) throws {
        let types = try FieldTypeRepository.all(connection)
        cache.withLock { $0 = types }
    }

    /// A type this instance just committed.
    func cached(_ name: String, _ type: FieldType) {
        cache.withLock { $0[name] = type }
    }

    /// Fixes types from the deployment's field configuration; a conflict with a type already in
    /// use is an error for the operator.
    public func pin(_ types: [String: FieldType], _ connection: PostgresConnection) throws {
        writable.withLock { $0 = Set(types.keys) }
        for (name, type) in types.sorted(by: { $0.key < $1.key }) {
            guard FieldSchema.isValidName(name) else {
                throw AccountsError(.invalidValue, "field configuration: '\(name)' is not a valid field name")
            }
            // The operator's own names are not held to the cap that stops clients inventing names.
            let stored = try FieldTypeRepository.claim(connection, name: name, type: type, pinned: true)!.type
            guard stored == type else {
                throw AccountsError(
                    .invalidType, "field configuration: '\(name)' is \(type.rawValue), but the database already has it as \(stored.rawValue)")
            }
            cache.withLock { $0[name] = stored }
        }
    }

    /// Validates the custom fields a write sets (nil values remove a field) and returns them in
    /// canonical form; fields new to the deployment get their type from this write, inside the
    /// caller's transaction, so a rejected write fixes no type.
    func validate(_ changes: [(String, JSONValue)], _ connection: PostgresConnection) throws -> [(String, JSONValue)] {
        try validate(changes) { name, given in
            if let known = cache.withLock({ $0[name] }) { return known }
            guard let claimed = try FieldTypeRepository.claim(connection, name: name, type: given, maxNames: limits.maxFieldNames) else {
                throw AccountsError.field(
                    "data.\(name)", .fieldLimitReached,
                    "the deployment already has \(limits.maxFieldNames) custom field names")
            }
            // A type this transaction inserted is not settled until it commits: a refused write
            // (another field invalid, email taken, If-Match stale) rolls it back, so only a type
            // that was already committed may enter the cache.
            if !claimed.inserted { cache.withLock { $0[name] = claimed.type } }
            return claimed.type
        }!
    }

    /// The same checks with cached types only: nil when a field's type is not cached yet, so that
    /// a write of known fields needs no query to validate.
    func validateCached(_ changes: [(String, JSONValue)]) throws -> [(String, JSONValue)]? {
        try validate(changes) { name, _ in cache.withLock { $0[name] } }
    }

    private func validate(
        _ changes: [(String, JSONValue)],
        type resolve: (String, FieldType) throws -> FieldType?
    ) throws -> [(String, JSONValue)]? {
        var errors: [AccountsError.FieldError] = []
        var result: [(String, JSONValue)] = []
        for (name, value) in changes {
            let path = "data.\(name)"
            guard FieldSchema.isValidName(name) else {
                errors.append(.init(field: path, code: .invalidValue, detail: "field names match ^[A-Za-z][A-Za-z0-9_]{0,63}$"))
                continue
            }
            if limits.schemaLocked, !writable.withLock({ $0.contains(name) }) {
                errors.append(.init(field: path, code: .unknownField, detail: "is not a field of this deployment's schema"))
                continue
            }
            if value.isNull {
                result.append((name, value))
                continue
            }
            // PostgreSQL cannot store U+0000 in text or jsonb: refuse it here rather than fail there (500).
            if case .string(let text) = value, text.utf8.contains(0) {
                errors.append(.init(field: path, code: .invalidValue, detail: "strings must not contain U+0000"))
                continue
            }
            guard let given = FieldType.inferred(from: value) else {
                errors.append(
                    .init(
                        field: path, code: .invalidType,
                        detail: "expected string, integer, double, boolean, date or datetime, got \(FieldType.describe(value))"))
                continue
            }
            guard let type = try resolve(name, given) else { return nil }
            guard let canonical = type.canonical(value, limits: limits) else {
                if type == .string, case .string = value {
                    errors.append(.init(field: path, code: .invalidValue, detail: "strings are at most \(limits.maxStringBytes) bytes"))
                } else if type == .integer, case .number(let number) = value, number.isInteger {
                    errors.append(.init(field: path, code: .invalidValue, detail: "integers must fit in 64 bits"))
                } else if type == .double, case .number = value {
                    errors.append(.init(field: path, code: .invalidValue, detail: "the number is out of range for double"))
                } else {
                    errors.append(.init(field: path, code: .invalidType, detail: "expected \(type.rawValue), got \(FieldType.describe(value))"))
                }
                continue
            }
            result.append((name, canonical))
        }
        if !errors.isEmpty {
            if errors.count == 1, errors[0].code == .invalidType {
                throw AccountsError(.invalidType, "\(errors[0].field) must be \(article(errors[0].detail))", fields: errors)
            }
            throw AccountsError.invalid(errors)
        }
        return result
    }

    /// Refuses more custom fields than one user may hold.
    func checkFieldCount(_ count: Int) throws(AccountsError) {
        if count > limits.maxFields {
            throw .field("data", .invalidValue, "at most \(limits.maxFields) custom fields")
        }
    }

    /// Refuses a user whose document (custom fields, address and names) is over the limit.
    func checkDocumentSize(_ user: User) throws(AccountsError) {
        let size = user.data.jsonText.utf8.count + (user.email?.utf8.count ?? 0) + user.firstname.utf8.count + user.lastname.utf8.count
        if size > limits.maxDocumentBytes {
            throw .field("data", .invalidValue, "the user document is limited to \(limits.maxDocumentBytes) bytes")
        }
    }

    /// Writes validated fields into a user's data; a null value removes its field.
    static func apply(_ fields: [(String, JSONValue)], to data: inout JSONObject) {
        for (name, value) in fields {
            if value.isNull { data.removeValue(forKey: name) } else { data[name] = value }
        }
    }

    static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 64, isLetter(first) else { return false }
        return bytes.allSatisfy { isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "_") }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) }

    /// "expected double, got string" → "a double".
    private func article(_ detail: String) -> String {
        let type = detail.dropFirst("expected ".count).prefix { $0 != "," }
        return (type.first.map { "aeiou".contains($0) } ?? false ? "an " : "a ") + type
    }
}
