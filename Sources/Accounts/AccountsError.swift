/// A rule of the accounts domain was broken: a stable code, a message for people, and the
/// fields involved. The API maps codes to HTTP statuses; nothing here holds a secret.
public struct AccountsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable code; an open set of static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        public static let invalidJSON = Code("invalid_json")
        public static let unknownField = Code("unknown_field")
        public static let invalidType = Code("invalid_type")
        public static let invalidValue = Code("invalid_value")
        public static let invalidEmail = Code("invalid_email")
        public static let weakPassword = Code("weak_password")
        public static let passwordNotAllowed = Code("password_not_allowed")
        public static let passwordUnchanged = Code("password_unchanged")
        public static let passwordMismatch = Code("password_mismatch")
        public static let emailTaken = Code("email_taken")
        public static let invalidCredentials = Code("invalid_credentials")
        public static let invalidToken = Code("invalid_token")
        public static let missingToken = Code("missing_token")
        public static let invalidPassword = Code("invalid_password")
        public static let tooManyAttempts = Code("too_many_attempts")
        public static let notFound = Code("not_found")
        public static let preconditionFailed = Code("precondition_failed")
        public static let overloaded = Code("overloaded")
        /// The client went away before expensive work for it started; the answer reaches nobody.
        public static let cancelled = Code("cancelled")
        /// The deployment has as many custom field names as it allows.
        public static let fieldLimitReached = Code("field_limit_reached")
    }

    /// One offending field, named by its JSON path (`data.height`).
    public struct FieldError: Sendable, Equatable {
        public let field: String
        public let code: Code
        public let detail: String

        public init(field: String, code: Code, detail: String) {
            self.field = field
            self.code = code
            self.detail = detail
        }
    }

    public let code: Code
    public let detail: String
    public let fields: [FieldError]
    /// For `tooManyAttempts` and `overloaded`: when to try again.
    public let retryAfterSeconds: Int?

    public init(_ code: Code, _ detail: String, fields: [FieldError] = [], retryAfterSeconds: Int? = nil) {
        self.code = code
        self.detail = detail
        self.fields = fields
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The one answer for every token that does not lead to a live session: the causes are not told apart.
    public static let invalidToken = AccountsError(.invalidToken, "The access token is missing, malformed, unknown, expired or revoked.")

    /// A validation failure of several fields: the first one's code leads.
    public static func invalid(_ fields: [FieldError]) -> AccountsError {
        let first = fields[0]
        let detail = fields.count == 1 ? "\(first.field): \(first.detail)" : "\(fields.count) fields are invalid; the first: \(first.field): \(first.detail)"
        return AccountsError(first.code, detail, fields: fields)
    }

    public static func field(_ field: String, _ code: Code, _ detail: String) -> AccountsError {
        AccountsError(code, "\(field): \(detail)", fields: [FieldError(field: field, code: code, detail: detail)])
    }

    public var description: String { "\(code): \(detail)" }
}
