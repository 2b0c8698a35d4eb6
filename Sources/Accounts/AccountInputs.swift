import JSON

// What the account operations take, already read from a request: the API turns JSON bodies and
// headers into these, and the service applies the domain's rules to them.

/// `POST /users`.
public struct Registration: Sendable {
    public var email: EmailAddress
    public var password: String
    public var firstname: String
    public var lastname: String
    /// Custom fields, not yet checked against their types.
    public var data: JSONObject

    public init(email: EmailAddress, password: String, firstname: String = "", lastname: String = "", data: JSONObject = JSONObject()) {
        self.email = email
        self.password = password
        self.firstname = firstname
        self.lastname = lastname
        self.data = data
    }
}

/// `POST /users/signin`: the email as typed, since an invalid one still counts against its throttle.
public struct SignInAttempt: Sendable {
    public var email: String
    public var password: String

    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }
}

/// `POST /users/me/password`.
public struct PasswordChange: Sendable {
    public var oldPassword: String
    public var newPassword: String
    /// When given, it must equal `newPassword`.
    public var confirmPassword: String?

    public init(oldPassword: String, newPassword: String, confirmPassword: String? = nil) {
        self.oldPassword = oldPassword
        self.newPassword = newPassword
        self.confirmPassword = confirmPassword
    }
}

/// `PUT /users/me`: the whole editable representation.
public struct ProfileReplacement: Sendable {
    public var email: EmailAddress
    public var firstname: String
    public var lastname: String
    /// Every custom field the user keeps, not yet checked against their types.
    public var data: JSONObject

    public init(email: EmailAddress, firstname: String = "", lastname: String = "", data: JSONObject = JSONObject()) {
        self.email = email
        self.firstname = firstname
        self.lastname = lastname
        self.data = data
    }
}

/// `PATCH /users/me`, a JSON Merge Patch (RFC 7396): nil leaves a member as it is.
public struct ProfilePatch: Sendable {
    public var email: EmailAddress?
    public var firstname: String?
    public var lastname: String?
    /// Custom fields to set; a null value removes its field.
    public var data: JSONObject?
    /// `"data": null`: every custom field goes.
    public var removesAllData: Bool

    public init(
        email: EmailAddress? = nil, firstname: String? = nil, lastname: String? = nil, data: JSONObject? = nil,
        removesAllData: Bool = false
    ) {
        self.email = email
        self.firstname = firstname
        self.lastname = lastname
        self.data = data
        self.removesAllData = removesAllData
    }
}

/// Which versions of a user a write may change: the strong entity tags of an `If-Match` list.
public enum WriteCondition: Sendable, Equatable {
    /// No `If-Match`, or `*`: whichever version is current.
    case any
    /// Only a version whose `etag` is one of these (none, for a list of weak tags only).
    case matching([String])

    func allows(_ user: User) -> Bool {
        switch self {
        case .any: true
        case .matching(let tags): tags.contains(user.etag)
        }
    }
}

/// The rules of a first or last name, applied by whoever reads one.
public enum PersonName {
    public static let maxCharacters = 100

    /// Why `name` is not a valid first or last name, or nil when it is.
    public static func problem(_ name: String) -> String? {
        if name.unicodeScalars.count > maxCharacters { return "must be at most \(maxCharacters) characters" }
        // PostgreSQL text cannot hold U+0000; refused here, it is a 422 instead of a failed INSERT (500).
        if name.utf8.contains(0) { return "must not contain U+0000" }
        return nil
    }
}
