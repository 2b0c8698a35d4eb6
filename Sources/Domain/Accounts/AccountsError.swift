import JSON

/// A rule of the accounts domain was broken: a stable code, a message for people, and the
/// fields involved. The API maps codes to HTTP statuses; nothing here holds a secret.
public struct AccountsError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable, machine-readable code.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        public var description: String { rawValue }

        case invalidJSON = "invalid_json"
        case unknownField = "unknown_field"
        case invalidType = "invalid_type"
        case invalidValue = "invalid_value"
        case invalidEmail = "invalid_email"
        case weakPassword = "weak_password"
        case passwordNotAllowed = "password_not_allowed"
        case passwordUnchanged = "password_unchanged"
        case passwordMismatch = "password_mismatch"
        case emailTaken = "email_taken"
        case invalidCredentials = "invalid_credentials"
        case invalidToken = "invalid_token"
        case missingToken = "missing_token"
        case invalidPassword = "invalid_password"
        case tooManyAttempts = "too_many_attempts"
        case notFound = "not_found"
        case preconditionFailed = "precondition_failed"
        case overloaded
        /// The client went away before expensive work for it started; the answer reaches nobody.
        case cancelled
        /// The deployment has as many custom field names as it allows.
        case fieldLimitReached = "field_limit_reached"
        /// A password reset link that is unknown, used, expired or superseded.
        case invalidResetToken = "invalid_reset_token"
        /// An email verification link that is unknown, used, expired or for another address.
        case invalidVerificationToken = "invalid_verification_token"
        /// A link that undoes a change of address that is unknown, used or expired.
        case invalidUndoToken = "invalid_undo_token"
        /// A verification mail was asked for an address that is verified.
        case alreadyVerified = "already_verified"
        /// An administrator disabled the account: it cannot sign in.
        case accountDisabled = "account_disabled"
        /// An admin-only name (an administrator's email) that already exists.
        case adminExists = "admin_exists"
        /// Pinning a field's type that values stored for the field do not have.
        case schemaConflict = "schema_conflict"
        /// An Apple or Google ID token that is malformed, badly signed, for another app, expired,
        /// of another nonce, or without an address.
        case invalidIDToken = "invalid_id_token"
        /// A provider's first sign-in found an account holding its address that it may not link.
        case accountExists = "account_exists"
        /// The provider's identity is linked to another account.
        case identityTaken = "identity_taken"
        /// Removing the account's only way to sign in.
        case lastSignInMethod = "last_sign_in_method"
        /// The provider's keys were never fetched: a token cannot be checked.
        case providerUnavailable = "provider_unavailable"
        /// A passkey registration that failed its checks (challenge, origin, RP id, flags, attestation).
        case invalidPasskey = "invalid_passkey"
        /// A change of the ways into an account asked for by a session whose holder has not proved a
        /// credential recently (`POST /users/me/reauthenticate`).
        case reauthenticationRequired = "reauthentication_required"
        /// A change of the ways into an account whose address is not verified.
        case emailUnverified = "email_unverified"
        /// A sign-in proved one factor of an account whose second factor is on: finish it with
        /// `POST /users/signin/mfa` and the `mfaToken` the problem carries.
        case mfaRequired = "mfa_required"
        /// A one-time or recovery code that is wrong, used, or outside its window.
        case invalidCode = "invalid_code"
        /// An `mfaToken` that is unknown, used, expired, or ended by five wrong codes.
        case invalidMFAToken = "invalid_mfa_token"
        /// A second factor asked for while one is on already.
        case alreadyEnabled = "already_enabled"
        /// An administrator without a second factor where the deployment requires one
        /// (`--admin-mfa required`): only the enrolment is open to their session.
        case mfaEnrolmentRequired = "mfa_enrolment_required"
        /// What needs the account's address (a code by mail, a first password, a reset) asked of
        /// an account without one (a guest).
        case noAddress = "no_address"
    }

    /// What finishes a sign-in that proved one factor (`mfaRequired`): its single-use token and
    /// the factors that may finish it.
    public struct SecondFactorChallenge: Sendable, Equatable {
        public let token: String
        public let factors: [String]
    }

    /// One offending field, named by its JSON path (`data.height`).
    public typealias FieldError = JSON.FieldError<Code>

    public let code: Code
    public let detail: String
    public let fields: [FieldError]
    /// For `tooManyAttempts` and `overloaded`: when to try again.
    public let retryAfterSeconds: Int?
    /// For `mfaRequired`: the token and factors that finish the sign-in.
    public var secondFactor: SecondFactorChallenge?

    public init(_ code: Code, _ detail: String, fields: [FieldError] = [], retryAfterSeconds: Int? = nil) {
        self.code = code
        self.detail = detail
        self.fields = fields
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// `401 mfa_required` with the challenge that finishes the sign-in.
    static func mfaRequired(token: String) -> AccountsError {
        var error = AccountsError(.mfaRequired, "The second factor is on: send a code with POST /users/signin/mfa and the mfaToken.")
        error.secondFactor = SecondFactorChallenge(token: token, factors: ["totp", "recovery_code"])
        return error
    }

    /// The one answer for every token that does not lead to a live session: the causes are not told apart.
    public static let invalidToken = AccountsError(.invalidToken, "The access token is missing, malformed, unknown, expired or revoked.")

    /// The answer to a write that gives a user an address another account holds.
    static let emailTaken = AccountsError.field("email", .emailTaken, "is already registered")

    /// A validation failure of several fields: the first one's code leads.
    public static func invalid(_ fields: [FieldError]) -> AccountsError {
        let first = fields[0]
        let detail =
            fields.count == 1 ? "\(first.field): \(first.detail)" : "\(fields.count) fields are invalid; the first: \(first.field): \(first.detail)"
        return AccountsError(first.code, detail, fields: fields)
    }

    public static func field(_ field: String, _ code: Code, _ detail: String) -> AccountsError {
        AccountsError(code, "\(field): \(detail)", fields: [FieldError(field: field, code: code, detail: detail)])
    }

    public var description: String { "\(code): \(detail)" }
}
