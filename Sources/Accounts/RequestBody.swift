import JSON

/// Reads the members of a JSON request body by the contract's rules: unknown keys are refused,
/// read-only keys echoed back by a client are ignored, and types are checked with clear errors.
struct RequestBody {
    /// Keys a client may echo back from a user representation; they change nothing.
    static let readOnlyKeys: Set<String> = ["id", "createdAt", "updatedAt", "emailVerified"]

    let object: JSONObject

    /// Refuses every key outside `allowed` (and the read-only ones when `ignoringReadOnly`).
    func checkKeys(allowed: Set<String>, ignoringReadOnly: Bool = false) throws(AccountsError) {
        var errors: [AccountsError.FieldError] = []
        for key in object.keys where !allowed.contains(key) && !(ignoringReadOnly && RequestBody.readOnlyKeys.contains(key)) {
            if key == "password" {
                errors.append(.init(field: key, code: .passwordNotAllowed,
                                    detail: "the password is changed with POST /users/me/password"))
            } else {
                errors.append(.init(field: key, code: .unknownField, detail: "is not a known field"))
            }
        }
        if !errors.isEmpty { throw .invalid(errors) }
    }

    func has(_ key: String) -> Bool { object.contains(key: key) }

    /// A string member; nil when absent (or null and `nullAllowed`).
    func string(_ key: String, required: Bool = false, nullAllowed: Bool = false) throws(AccountsError) -> String? {
        switch object[key] {
        case nil:
            if required { throw .field(key, .invalidValue, "is required") }
            return nil
        case .null?:
            if nullAllowed { return nil }
            throw .field(key, required ? .invalidValue : .invalidType, required ? "is required" : "expected string, got null")
        case .string(let value)?:
            return value
        case let other?:
            throw .field(key, .invalidType, "expected string, got \(FieldType.describe(other))")
        }
    }

    /// A name (firstname, lastname): a string of at most 100 characters; null means empty.
    func name(_ key: String) throws(AccountsError) -> String? {
        guard let value = try string(key, nullAllowed: true) else { return has(key) ? "" : nil }
        guard value.unicodeScalars.count <= 100 else { throw .field(key, .invalidValue, "must be at most 100 characters") }
        // PostgreSQL text cannot hold U+0000; refused here, it is a 422 instead of a failed INSERT (500).
        guard !value.utf8.contains(0) else { throw .field(key, .invalidValue, "must not contain U+0000") }
        return value
    }

    /// The `data` member as an object; `null` counts as an empty object.
    func data() throws(AccountsError) -> JSONObject? {
        switch object["data"] {
        case nil: return nil
        case .null?: return JSONObject()
        case .object(let value)?: return value
        case let other?: throw .field("data", .invalidType, "expected object, got \(FieldType.describe(other))")
        }
    }
}
