import Accounts
import JSON

/// Reads the members of a JSON request body by the contract's rules: unknown keys are refused,
/// read-only keys echoed back by a client are ignored, and types are checked with clear errors.
struct RequestBody {
    /// Keys a client may echo back from a user representation; they change nothing.
    static let readOnlyKeys: Set<String> = ["id", "createdAt", "updatedAt", "emailVerified", "pendingEmail", "isGuest"]

    let object: JSONObject

    /// Refuses every key outside `allowed` (and the read-only ones when `ignoringReadOnly`).
    func checkKeys(allowed: Set<String>, ignoringReadOnly: Bool = false) throws(AccountsError) {
        var errors: [AccountsError.FieldError] = []
        for key in object.keys where !allowed.contains(key) && !(ignoringReadOnly && RequestBody.readOnlyKeys.contains(key)) {
            if key == "password" {
                errors.append(
                    .init(
                        field: key, code: .passwordNotAllowed,
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
        if let problem = PersonName.problem(value) { throw .field(key, .invalidValue, problem) }
        return value
    }

    /// A required email address.
    func email(_ key: String) throws(AccountsError) -> EmailAddress {
        try RequestBody.email(try string(key, required: true)!, key: key)
    }

    static func email(_ text: String, key: String) throws(AccountsError) -> EmailAddress {
        guard let email = EmailAddress(text) else { throw .field(key, .invalidEmail, "is not a valid email address") }
        return email
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

/// The request bodies of accounts and profiles, read into what the service takes.
enum AccountBodies {
    static func registration(_ body: JSONObject) throws -> Registration {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["email", "password", "firstname", "lastname", "data"])
        return Registration(
            email: try reader.email("email"), password: try reader.string("password", required: true)!,
            firstname: try reader.name("firstname") ?? "", lastname: try reader.name("lastname") ?? "",
            data: try reader.data() ?? JSONObject())
    }

    static func guest(_ body: JSONObject) throws -> GuestStart {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["firstname", "lastname", "data"])
        return GuestStart(
            firstname: try reader.name("firstname") ?? "", lastname: try reader.name("lastname") ?? "", data: try reader.data() ?? JSONObject())
    }

    /// `POST /users/signin/email-code/verify`: `{email, code}`.
    static func emailCodeAttempt(_ body: JSONObject) throws -> EmailCodeAttempt {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["email", "code"])
        return EmailCodeAttempt(email: try reader.email("email"), code: try reader.string("code", required: true)!)
    }

    static func signIn(_ body: JSONObject) throws -> SignInAttempt {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["email", "password"])
        return SignInAttempt(email: try reader.string("email", required: true)!, password: try reader.string("password", required: true)!)
    }

    /// `{"scope": "current" | "others" | "all"}`, all optional.
    static func signOutScope(_ body: JSONObject) throws -> Sessions.SignOutScope {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["scope"])
        guard let text = try reader.string("scope") else { return .current }
        guard let scope = Sessions.SignOutScope(rawValue: text) else {
            throw AccountsError.field("scope", .invalidValue, "expected current, others or all")
        }
        return scope
    }

    static func passwordChange(_ body: JSONObject) throws -> PasswordChange {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["oldPassword", "newPassword", "confirmPassword"])
        return PasswordChange(
            oldPassword: try reader.string("oldPassword"),
            newPassword: try reader.string("newPassword", required: true)!,
            confirmPassword: try reader.string("confirmPassword"))
    }

    /// `DELETE /users/me`: the current password; none for an account without one.
    static func accountDeletion(_ body: JSONObject) throws -> String? {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["password"])
        return try reader.string("password")
    }

    static func replacement(_ body: JSONObject) throws -> ProfileReplacement {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["email", "firstname", "lastname", "data"], ignoringReadOnly: true)
        return ProfileReplacement(
            email: try reader.string("email", nullAllowed: true).map { text throws(AccountsError) in try RequestBody.email(text, key: "email") },
            firstname: try reader.name("firstname") ?? "",
            lastname: try reader.name("lastname") ?? "", data: try reader.data() ?? JSONObject())
    }

    static func patch(_ body: JSONObject) throws -> ProfilePatch {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["email", "firstname", "lastname", "data"], ignoringReadOnly: true)
        return ProfilePatch(
            email: try reader.string("email").map { text throws(AccountsError) in try RequestBody.email(text, key: "email") },
            firstname: try reader.name("firstname"), lastname: try reader.name("lastname"), data: try reader.data(),
            removesAllData: body["data"]?.isNull ?? false)
    }

    /// `POST /users/password-reset`: `{email}`.
    static func resetRequest(_ body: JSONObject) throws -> EmailAddress {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["email"])
        return try reader.email("email")
    }

    /// `POST /users/password-reset/confirm`: `{token, newPassword}`.
    static func resetConfirmation(_ body: JSONObject) throws -> (token: String, newPassword: String) {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["token", "newPassword"])
        return (try reader.string("token", required: true)!, try reader.string("newPassword", required: true)!)
    }

    /// `POST /users/verify-email`: `{token}`.
    static func verification(_ body: JSONObject) throws -> String {
        let reader = RequestBody(object: body)
        try reader.checkKeys(allowed: ["token"])
        return try reader.string("token", required: true)!
    }
}
