/// What an entry of the administrators' audit log records. Its `text` is the entry's `action`
/// as stored and listed (`GET /admin/audit`): a dotted name, then what the action was on when the
/// entry has no target user (a field and its type, a key, an administrator's email).
public enum AuditAction: Sendable, Equatable, CustomStringConvertible {
    // Reads, by an administrator in the console or the API.
    case usersSearch, userRead, userSessionsRead, userActivityRead, userImagesRead, userImageRead
    case schemaRead, statsRead, auditRead
    // Changes to a user.
    case userUpdate, userDisable, userEnable, userDelete, userSessionsRevokeAll, userSessionRevoke, userPasswordReset
    /// A user's passwordless ways in read, a passkey removed, an Apple or Google identity unlinked.
    case userSignInMethodsRead, userPasskeyRemove, userIdentityUnlink
    /// A user's second factor turned off (a lost phone and no recovery code left).
    case userMFAReset
    /// A custom field's type pinned.
    case schemaPin(field: String, type: FieldType)
    // Administrators' own sessions.
    case adminSetup, adminSignIn, adminSignInFailed, adminSignOut
    /// An administrator turned their own second factor on, or read its state.
    case adminMFAEnabled, adminMFARead, adminMFAEnrolmentStarted
    /// `exosphere admin reset-mfa`.
    case commandAdminResetMFA(email: String)
    // Commands run on the server's machine (`exosphere admin …`, `exosphere keys …`).
    case commandAdminCreate(email: String)
    case commandAdminResetPassword(email: String)
    case commandAdminDelete(email: String)
    case commandAdminList
    case commandKeysRotate(keyID: Int32)
    case commandKeysRevoke(keyID: Int32)

    public var text: String {
        switch self {
        case .usersSearch: "users.search"
        case .userRead: "user.read"
        case .userSessionsRead: "user.sessions.read"
        case .userActivityRead: "user.activity.read"
        case .userImagesRead: "user.images.read"
        case .userImageRead: "user.image.read"
        case .schemaRead: "schema.read"
        case .statsRead: "stats.read"
        case .auditRead: "audit.read"
        case .userUpdate: "user.update"
        case .userDisable: "user.disable"
        case .userEnable: "user.enable"
        case .userDelete: "user.delete"
        case .userSessionsRevokeAll: "user.sessions.revoke_all"
        case .userSessionRevoke: "user.session.revoke"
        case .userPasswordReset: "user.password_reset"
        case .userSignInMethodsRead: "user.sign_in_methods.read"
        case .userPasskeyRemove: "user.passkey.remove"
        case .userIdentityUnlink: "user.identity.unlink"
        case .userMFAReset: "user.mfa.reset"
        case .schemaPin(let field, let type): "schema.pin:\(field):\(type.rawValue)"
        case .adminSetup: "admin.setup"
        case .adminSignIn: "admin.signin"
        case .adminSignInFailed: "admin.signin_failed"
        case .adminSignOut: "admin.signout"
        case .adminMFAEnabled: "admin.mfa_enabled"
        case .adminMFARead: "admin.mfa.read"
        case .adminMFAEnrolmentStarted: "admin.mfa.enrol"
        case .commandAdminResetMFA(let email): "cli.admin.reset_mfa \(email)"
        case .commandAdminCreate(let email): "cli.admin.create \(email)"
        case .commandAdminResetPassword(let email): "cli.admin.reset_password \(email)"
        case .commandAdminDelete(let email): "cli.admin.delete \(email)"
        case .commandAdminList: "cli.admin.list"
        case .commandKeysRotate(let id): "cli.keys.rotate \(id)"
        case .commandKeysRevoke(let id): "cli.keys.revoke \(id)"
        }
    }

    public var description: String { text }
}
