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
    /// An administrator's client that signed in as this email before (`AdminClient`): its
    /// guesses are not held by the per-email counter, which strangers can fill.
    public var fromKnownClient = false

    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }
}

/// `POST /users/me/password`.
public struct PasswordChange: Sendable {
    /// Nil for the first password of an account without one (a guest, a provider's account).
    public var oldPassword: String?
    public var newPassword: String
    /// When given, it must equal `newPassword`.
    public var confirmPassword: String?

    public init(oldPassword: String?, newPassword: String, confirmPassword: String? = nil) {
        self.oldPassword = oldPassword
        self.newPassword = newPassword
        self.confirmPassword = confirmPassword
    }
}

/// `PUT /users/me`: the whole editable representation.
public struct ProfileReplacement: Sendable {
    /// nil: the account keeps no address (a guest's may name none).
    public var email: EmailAddress?
    public var firstname: String
    public var lastname: String
    /// Every custom field the user keeps, not yet checked against their types.
    public var data: JSONObject

    public init(email: EmailAddress?, firstname: String = "", lastname: String = "", data: JSONObject = JSONObject()) {
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

    /// Why `name` is not a valid first or last name, or nil when it is. A name is shown in
    /// mail, in the console and in apps: control characters (C0, DEL, C1, U+0000 included, which
    /// PostgreSQL text cannot hold) and line or paragraph separators are refused, so that a name
    /// cannot add lines to a mail or hide text.
    public static func problem(_ name: String) -> String? {
        if name.unicodeScalars.count > maxCharacters { return "must be at most \(maxCharacters) characters" }
        if let scalar = name.unicodeScalars.first(where: isRefused) {
            return "must not contain control characters or line breaks (U+\(String(scalar.value, radix: 16, uppercase: true).leftPadded(to: 4)))"
        }
        return nil
    }

    /// U+0000–U+001F, U+007F–U+009F, U+2028 and U+2029.
    static func isRefused(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        count >= length ? self : String(repeating: "0", count: length - count) + self
    }
}

/// `POST /users/signin/email-code/verify`: the address and the code mailed to it.
public struct EmailCodeAttempt: Sendable {
    public var email: EmailAddress
    public var code: String

    public init(email: EmailAddress, code: String) {
        self.email = email
        self.code = code
    }
}

/// `POST /users/guest`: what a guest starts with (all optional).
public struct GuestStart: Sendable {
    public var firstname: String
    public var lastname: String
    /// Custom fields, not yet checked against their types.
    public var data: JSONObject

    public init(firstname: String = "", lastname: String = "", data: JSONObject = JSONObject()) {
        self.firstname = firstname
        self.lastname = lastname
        self.data = data
    }
}
