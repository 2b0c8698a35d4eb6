import Cryptography
import FoundationEssentials

/// One of a user's security events, as `GET /users/me/activity` lists them.
public struct ActivityEvent: Sendable, Equatable {
    /// What happened; the raw values are the contract's event types.
    public enum Kind: String, Sendable, CaseIterable {
        case signedIn = "signed_in"
        case signInFailed = "sign_in_failed"
        case signedOut = "signed_out"
        case sessionRevoked = "session_revoked"
        case passwordChanged = "password_changed"
        case passwordResetRequested = "password_reset_requested"
        case passwordReset = "password_reset"
        case emailChanged = "email_changed"
        case emailVerified = "email_verified"
        case lockedOut = "locked_out"
        /// The user downloaded everything the account holds (`GET /users/me/export`).
        case dataExported = "data_exported"
        /// Sign in with Apple or Google was linked to the account, or unlinked from it.
        case identityLinked = "identity_linked"
        case identityUnlinked = "identity_unlinked"
        /// A passkey was registered, or deleted.
        case passkeyAdded = "passkey_added"
        case passkeyRemoved = "passkey_removed"
        /// The second factor was turned on or off (by the user, or an administrator's reset).
        case mfaEnabled = "mfa_enabled"
        case mfaDisabled = "mfa_disabled"
        /// A recovery code finished a sign-in or a reauthentication.
        case recoveryCodeUsed = "recovery_code_used"
        /// A wrong code was sent for the second factor.
        case mfaFailed = "mfa_failed"
    }

    /// How a sign-in was made (`signed_in` events); the raw values are the contract's.
    public enum Method: String, Sendable, CaseIterable {
        case password, passkey, apple, google
        /// A code mailed to the account's address.
        case emailCode = "email_code"
    }

    public let id: UUID
    public let kind: Kind
    /// When, in microseconds since 1970.
    public let atMicroseconds: Int64
    public let ipAddress: String?
    public let userAgent: String?
    /// An administrator's doing (an ended session, an edited profile): no address or device then.
    public let byAdministrator: Bool
    /// How a sign-in was made; nil for other events (and sign-ins recorded before it was kept).
    public let method: Method?
}

/// A page of a user's activity, newest first; `next` continues it.
public struct ActivityPage: Sendable {
    public let events: [ActivityEvent]
    public let next: KeysetCursor?

    public init(events: [ActivityEvent], next: KeysetCursor?) {
        self.events = events
        self.next = next
    }
}
