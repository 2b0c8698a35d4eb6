import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Every failure of the client: an error the server answered (its RFC 9457 problem document:
/// `status`, `code`, `detail`, field errors, `Retry-After`), or one found on this side (no
/// network, not signed in, an unexpected response), told apart by `status` being nil.
///
/// Switch on `code`, never on `detail`, which is for people and may change:
///
/// ```swift
/// do {
///     user = try await exosphere.save(user)
/// } catch let error as ExosphereError where error.code == .preconditionFailed {
///     user = user.rebased(onto: error.serverCopy!)   // someone else saved first
/// }
/// ```
public struct ExosphereError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable, machine-readable error code: the server's `code`, or one of the client's own.
    public struct Code: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The code as the server writes it: `email_taken`.
        public let rawValue: String
        /// The code `rawValue`, known to this version or not.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// A code from a literal: `error.code == "range_not_satisfiable"`.
        public init(stringLiteral value: String) { rawValue = value }
        /// `rawValue`.
        public var description: String { rawValue }

        // The server's codes that apps most often handle (the OpenAPI document lists them all).
        /// `401` at sign-in: wrong email or password.
        public static let invalidCredentials: Code = "invalid_credentials"
        /// `401`: the token is unknown, expired or revoked; the client has signed out.
        public static let invalidToken: Code = "invalid_token"
        /// `401`: no token was sent.
        public static let missingToken: Code = "missing_token"
        /// `403`: the current password is wrong.
        public static let invalidPassword: Code = "invalid_password"
        /// `404`: the resource does not exist (or is another user's).
        public static let notFound: Code = "not_found"
        /// `404`: no image of the user has this id.
        public static let imageNotFound: Code = "image_not_found"
        /// `409`: another user has this email address.
        public static let emailTaken: Code = "email_taken"
        /// `412`: the profile changed on the server since it was read; see `serverCopy`.
        public static let preconditionFailed: Code = "precondition_failed"
        /// `422`: a custom field's value is not of the field's type.
        public static let invalidType: Code = "invalid_type"
        /// `422`: a value breaks a rule (length, name, count).
        public static let invalidValue: Code = "invalid_value"
        /// `422`: the email address is not valid.
        public static let invalidEmail: Code = "invalid_email"
        /// `422`: the password breaks the policy (at least 8 characters).
        public static let weakPassword: Code = "weak_password"
        /// `422`: the new password equals the old one.
        public static let passwordUnchanged: Code = "password_unchanged"
        /// `422`: the confirmation differs from the new password.
        public static let passwordMismatch: Code = "password_mismatch"
        /// `422`: the image's bytes are not the declared format.
        public static let contentMismatch: Code = "content_mismatch"
        /// `422` from `confirmPasswordReset`: the reset link's token is unknown, used, expired, or
        /// superseded by a newer request or a password change; ask for a new link.
        public static let invalidResetToken: Code = "invalid_reset_token"
        /// `422` from `verifyEmail`: the token is unknown, used, expired, or for an address the
        /// account no longer has.
        public static let invalidVerificationToken: Code = "invalid_verification_token"
        /// `422` from `undoEmailChange`: the token is unknown, used or expired.
        public static let invalidUndoToken: Code = "invalid_undo_token"
        /// `409` from `resendVerificationEmail()`: the address is verified already.
        public static let alreadyVerified: Code = "already_verified"
        /// `403` from a change of the ways in (passkeys, identities): the holder last proved a
        /// credential too long ago; call `reauthenticate(password:)`, then try again.
        public static let reauthenticationRequired: Code = "reauthentication_required"
        /// `403` from a change of the ways in: the account's address is not verified yet.
        public static let emailUnverified: Code = "email_unverified"
        /// `401` at sign-in: the first factor was right and the second factor is on; finish with
        /// `finishSignIn(_:code:)` and the error's `secondFactor`.
        public static let mfaRequired: Code = "mfa_required"
        /// `401` (finishing a sign-in) or `422` (enrolment, reauthentication): a one-time or
        /// recovery code that is wrong, used, or outside its window.
        public static let invalidCode: Code = "invalid_code"
        /// `401` from `finishSignIn`: the challenge is used, expired or ended by five wrong codes;
        /// sign in again.
        public static let invalidMFAToken: Code = "invalid_mfa_token"
        /// `409` from `startTOTPEnrolment()`: the second factor is on already.
        public static let alreadyEnabled: Code = "already_enabled"
        /// `409`: what needs the account's address (a code by mail, a first password) asked of a
        /// guest, which has none yet.
        public static let noAddress: Code = "no_address"
        /// `429`: throttled; see `retryAfter`.
        public static let tooManyAttempts: Code = "too_many_attempts"
        /// `503`: the server is at its limit; see `retryAfter`.
        public static let overloaded: Code = "overloaded"
        /// `503`: no database connection was free in time.
        public static let databaseBusy: Code = "database_busy"
        /// `503`: the database cannot be reached (on a write: it may or may not have happened).
        public static let databaseUnavailable: Code = "database_unavailable"

        // The client's own codes (with `status` nil).
        /// The request needs a signed-in user and there is none.
        public static let notSignedIn: Code = "not_signed_in"
        /// `401` (signing in) or `422` (linking): an Apple or Google ID token the server refused.
        public static let invalidIDToken: Code = "invalid_id_token"
        /// `409`: an account holds the provider's address; sign in to it and link the provider.
        public static let accountExists: Code = "account_exists"
        /// `409`: the Apple or Google identity is linked to another account.
        public static let identityTaken: Code = "identity_taken"
        /// `409`: removing the account's last way to sign in.
        public static let lastSignInMethod: Code = "last_sign_in_method"
        /// `503`: the server could not fetch the provider's keys yet.
        public static let providerUnavailable: Code = "provider_unavailable"
        /// `422`: a passkey registration the server refused (expired challenge, another RP id, …).
        public static let invalidPasskey: Code = "invalid_passkey"
        /// The server could not be reached, or the connection broke (`underlyingError` says how).
        public static let networkError: Code = "network_error"
        /// The server's answer is not what the API promises.
        public static let invalidResponse: Code = "invalid_response"
        /// The session could not be written to or read from the session store.
        public static let sessionStoreFailed: Code = "session_store_failed"
        /// `User.decodeData(as:)` could not decode the custom fields.
        public static let decodingFailed: Code = "decoding_failed"
        /// A value that JSON cannot carry (NaN, infinity), or a file that cannot be read.
        public static let invalidArgument: Code = "invalid_argument"
    }

    /// One offending field of a `422`.
    public struct FieldError: Hashable, Sendable {
        /// A JSON path into the request body: `email`, `data.height`.
        public let field: String
        /// Why, e.g. `invalid_type`.
        public let code: Code
        /// For people: `expected double, got string`.
        public let detail: String
    }

    /// The HTTP status, or nil when the error happened on this side.
    public let status: Int?
    /// What went wrong, for the app to switch on.
    public let code: Code
    /// For people: the server's `detail`, or the client's explanation.
    public let detail: String
    /// The offending fields of a validation failure (`422`), the first 20.
    public let fieldErrors: [FieldError]
    /// How long the server asked to wait before trying again (`429`, `503`), in seconds.
    public let retryAfter: TimeInterval?
    /// For `412 precondition_failed` from `save`: the server's current copy of the user.
    public let serverCopy: User?
    /// The transport's error, for `network_error`.
    public let underlyingError: (any Error)?
    /// For `401 mfa_required`: what finishes the sign-in (`finishSignIn(_:code:)`).
    public private(set) var secondFactor: SecondFactorChallenge?

    /// A sign-in waiting for its second factor: the single-use token (5 minutes) and the factors
    /// that may finish it (`totp`, `recovery_code`).
    public struct SecondFactorChallenge: Sendable, Hashable {
        public let token: String
        public let factors: [String]
    }

    init(
        status: Int? = nil, code: Code, detail: String, fieldErrors: [FieldError] = [], retryAfter: TimeInterval? = nil,
        serverCopy: User? = nil, underlyingError: (any Error)? = nil
    ) {
        self.status = status
        self.code = code
        self.detail = detail
        self.fieldErrors = fieldErrors
        self.retryAfter = retryAfter
        self.serverCopy = serverCopy
        self.underlyingError = underlyingError
    }

    /// Whether the profile changed on the server since it was read (`412`); `serverCopy` has it.
    public var isConflict: Bool { code == .preconditionFailed }

    /// Whether the session ended (`401` on an authenticated request); the client has signed out.
    public var isSessionExpired: Bool { status == 401 && ![.invalidCredentials, .mfaRequired, .invalidCode, .invalidMFAToken].contains(code) }

    /// The status and code only: `detail` may echo what the user typed.
    public var description: String {
        "ExosphereError(\(status.map(String.init) ?? "client"), \(code))"
    }

    /// Everything, `detail` included: for logs the app keeps to itself.
    public var debugDescription: String {
        var text = "ExosphereError(status: \(status.map(String.init) ?? "nil"), code: \(code), detail: \(detail)"
        if !fieldErrors.isEmpty {
            text += ", fields: " + fieldErrors.map { "\($0.field) \($0.code)" }.joined(separator: ", ")
        }
        if let retryAfter { text += ", retryAfter: \(retryAfter)s" }
        if let underlyingError { text += ", underlying: \(underlyingError)" }
        return text + ")"
    }

    static func invalidResponse(_ detail: String, status: Int? = nil) -> ExosphereError {
        ExosphereError(status: status, code: .invalidResponse, detail: "Unexpected response from the server: \(detail)")
    }

    static let notSignedIn = ExosphereError(code: .notSignedIn, detail: "Sign in first: there is no session.")

    /// The error of a problem document (or of a response that is not one).
    init(status: Int, body: Data, retryAfter: TimeInterval?, serverCopy: User? = nil) {
        let problem = try? JSONValue.parse(body)
        let code = problem?["code"]?.stringValue.map(Code.init(rawValue:)) ?? Code(rawValue: "http_\(status)")
        let detail = problem?["detail"]?.stringValue ?? HTTPURLResponse.localizedString(forStatusCode: status)
        let fields =
            problem?["errors"]?.arrayValue?.compactMap { entry -> FieldError? in
                guard let field = entry["field"]?.stringValue else { return nil }
                return FieldError(field: field, code: Code(rawValue: entry["code"]?.stringValue ?? ""), detail: entry["detail"]?.stringValue ?? "")
            } ?? []
        self.init(status: status, code: code, detail: detail, fieldErrors: fields, retryAfter: retryAfter, serverCopy: serverCopy)
        if code == .mfaRequired, let token = problem?["mfaToken"]?.stringValue {
            secondFactor = SecondFactorChallenge(token: token, factors: problem?["factors"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        }
    }
}
