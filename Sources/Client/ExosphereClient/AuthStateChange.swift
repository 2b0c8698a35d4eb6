/// A change of the client's signed-in state, from `Exosphere.authStateChanges()`.
public enum AuthStateChange: Hashable, Sendable {
    /// The state when the stream was created: the restored user, or nil when signed out.
    case initial(User?)
    /// Registered, signed in, or set a new password with a mailed reset link.
    case signedIn(User)
    /// Signed out by the app (`signOut`, revoking its own session).
    case signedOut
    /// The server refused the session (`401`: expired, revoked elsewhere, or the password was
    /// changed on another device). The stored session is gone; show the sign-in screen.
    case sessionExpired
    /// The account was deleted (`deleteAccount(password:)`).
    case accountDeleted
}
