/// A mail to send, as the outbox keeps it: which template, to whom, and the template's values.
/// It is rendered when it is sent, so a fixed template also fixes mails still waiting.
public struct OutgoingMail: Sendable, Equatable {
    public var kind: MailKind
    public var recipient: String
    public var variables: [String: String]

    public init(_ kind: MailKind, to recipient: String, _ variables: [String: String]) {
        self.kind = kind
        self.recipient = recipient
        self.variables = variables
    }

    /// The variable naming the slot of the link's token (an id, not a secret): the sender makes
    /// the token as it sends (`OutboxSender`'s `mintToken`), so no queued mail holds one.
    public static let tokenSlotVariable = "tokenSlot"
    /// The variable naming the slot of a mailed code (`OutboxSender`'s `mintCode` makes it).
    public static let codeSlotVariable = "codeSlot"
}

/// The mails Exosphere sends; the raw value names the template and its override files.
public enum MailKind: String, Sendable, CaseIterable {
    /// A link that verifies the address it was sent to (registration, a changed email, a resend).
    case verifyEmail = "verify_email"
    /// A link to choose a new password.
    case passwordReset = "password_reset"
    /// A notice that the account's password was changed or reset.
    case passwordChanged = "password_changed"
    /// A notice to the old address that an administrator changed the account's email.
    case emailChanged = "email_changed"
    /// A link to the new address of a pending change of email: opening it applies the change.
    case confirmEmailChange = "confirm_email_change"
    /// A notice to the old address that the user's change of email applied, with a link that
    /// puts the old address back (7 days).
    case emailChangeApplied = "email_change_applied"
    /// A notice that everything the account holds was downloaded (`GET /users/me/export`).
    case dataExported = "data_exported"
    /// A notice that a new way to sign in (`method`: Sign in with Apple, a passkey) was added to
    /// the account, with a link that removes it and ends every session (7 days).
    case signInMethodAdded = "sign_in_method_added"
    /// A notice that a way to sign in (`method`) was removed from the account.
    case signInMethodRemoved = "sign_in_method_removed"
    /// A notice that the second factor changed (`change`: turned on, off, new recovery codes).
    case secondFactorChanged = "second_factor_changed"
    /// An 8-digit code (`code`) that signs in or confirms it is the account's holder (10 minutes).
    case signInCode = "sign_in_code"

    /// The page a link of this mail opens, when it carries a token.
    var linkPath: String? {
        switch self {
        case .verifyEmail, .confirmEmailChange: "/verify-email"
        case .passwordReset: "/reset-password"
        case .emailChangeApplied: "/undo-email-change"
        case .signInMethodAdded: "/remove-sign-in-method"
        case .passwordChanged, .emailChanged, .dataExported, .signInMethodRemoved, .secondFactorChanged, .signInCode: nil
        }
    }
}
