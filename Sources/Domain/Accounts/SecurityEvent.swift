import FoundationEssentials
import StructuredLogging

/// A structured log line for each event an operator audits accounts by (OWASP ASVS V16): who
/// (user id when known), from where (client address, user agent), what and how it ended. Never
/// a password, token, hash or email address: those are secrets or personal data a log keeps too long.
struct SecurityEvent {
    enum Kind: String {
        case signedIn = "signed_in"
        case signInFailed = "sign_in_failed"
        case lockedOut = "locked_out"
        case registered
        case registrationThrottled = "registration_throttled"
        case passwordChanged = "password_changed"
        case passwordCheckFailed = "password_check_failed"
        case sessionRevoked = "session_revoked"
        case signedOut = "signed_out"
        case accountDeleted = "account_deleted"
        case passwordReset = "password_reset"
        case emailVerified = "email_verified"
        case emailChangeRequested = "email_change_requested"
        case emailChanged = "email_changed"
        case emailChangeUndone = "email_change_undone"
        case dataExported = "data_exported"
        case identityLinked = "identity_linked"
        case identityUnlinked = "identity_unlinked"
        case passkeyAdded = "passkey_added"
        case passkeyRemoved = "passkey_removed"
        case reauthenticated
        case mfaEnabled = "mfa_enabled"
        case mfaDisabled = "mfa_disabled"
        case recoveryCodeUsed = "recovery_code_used"
        case mfaFailed = "mfa_failed"
    }

    /// How the attempt ended.
    enum Outcome: String, Sendable {
        case success
        /// Tried and failed (a wrong password, say).
        case failure
        /// Not tried: a throttle or a lock said no first.
        case refused
    }

    static func log(_ logger: Logger, _ kind: Kind, outcome: Outcome, userID: UUID?, origin: RequestOrigin?, detail: String? = nil) {
        logger.notice(
            "security event",
            [
                "event": kind.rawValue,
                "outcome": outcome.rawValue,
                "user.id": userID?.lowercasedText ?? "-",
                "client.address": origin?.address ?? "-",
                "user_agent": origin?.userAgent.map { String($0.prefix(256)) } ?? "-",
                "detail": detail ?? "-",
            ])
    }
}
