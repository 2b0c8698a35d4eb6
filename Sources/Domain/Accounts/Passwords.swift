import Cryptography
import FoundationEssentials
import Postgres

/// The signed-in user's password: changing it, and deleting the account with it, both after a
/// check of the current one that wrong guesses lock (`Configuration.passwordChecks`).
public final class Passwords: Sendable {
    private let context: AccountsContext
    private let sessions: Sessions
    private let mail: AccountMail

    init(context: AccountsContext, sessions: Sessions, mail: AccountMail) {
        self.context = context
        self.sessions = sessions
        self.mail = mail
    }

    /// `POST /users/me/password`: verifies the old password, stores the new hash, revokes every
    /// other session and replaces the calling one, all in one transaction.
    /// A locked user's attempt is refused by the route's throttle, before any hashing.
    ///
    /// An account without a password sets its first one without `oldPassword`: a new way in, so
    /// it needs what adding one needs (a recent authentication, an address verified; a guest
    /// has only its session to prove), and an address to sign in with (`409 no_address`).
    public func changePassword(
        _ change: PasswordChange, user: User, session: Session, origin: RequestOrigin
    ) throws -> (IssuedSession, revokedSessions: Int) {
        let (old, new) = (change.oldPassword, change.newPassword)
        if let confirm = change.confirmPassword, confirm != new {
            throw AccountsError.field("confirmPassword", .passwordMismatch, "does not match newPassword")
        }
        try context.configuration.passwordPolicy.validate(new, field: "newPassword")
        if old == new { throw AccountsError.field("newPassword", .passwordUnchanged, "must differ from the old password") }
        let verifiedHash: String
        if let old {
            verifiedHash = try verifyCurrentPassword(old, userID: session.userID, origin: origin)
        } else {
            let stored = try withoutPassword(userID: session.userID, field: "oldPassword")
            guard user.email != nil else {
                throw AccountsError(.noAddress, "Add an address first (PATCH /users/me and its link): a password signs in with it.")
            }
            try sessions.requireVerifiedAddress(user)
            try sessions.requireRecentAuthentication(session, of: user)
            verifiedHash = stored
        }
        let hash = try context.onHashingPool(origin) { [hasher = context.hasher] in try hasher.hash(password: new) }
        let token = try SessionToken.generate()
        let changed = try context.pool.withTransaction { connection in
            // The row lock orders concurrent changes; a hash that moved since it was verified
            // means another change won, so this one's old password is no longer right.
            guard try UserRepository.passwordHash(connection, id: session.userID, forUpdate: true) == verifiedHash else {
                throw AccountsError(.invalidPassword, "The current password is wrong.")
            }
            try UserRepository.setPasswordHash(connection, id: session.userID, hash: hash)
            let revoked = try SessionRepository.deleteAll(connection, userID: session.userID, except: session.id)
            guard try SessionRepository.delete(connection, id: session.id, userID: session.userID) else {
                throw AccountsError(.invalidToken, "The session ended during the password change.")
            }
            let replacement = try SessionRepository.insert(
                connection, userID: session.userID, tokenHash: token.hash,
                userAgent: origin.userAgent, lifetime: context.configuration.lifetime, at: context.clock.now())
            guard let user = try UserRepository.find(connection, id: session.userID) else {
                throw AccountsError(.invalidToken, "The user no longer exists.")
            }
            try mail.passwordChanged(connection, user: user, .passwordChanged, origin: origin)
            return (IssuedSession(accessToken: token.text, session: replacement, user: user), revoked)
        }
        context.mailQueued()
        SecurityEvent.log(
            context.logger, .passwordChanged, outcome: .success, userID: session.userID, origin: origin,
            detail: "\(changed.1) other sessions revoked")
        return changed
    }

    /// `POST /users/me/reauthenticate` with the password: records that the session's holder
    /// proved it now, and returns that time. Throttled per user as the password change is.
    public func reauthenticate(password: String, session: Session, origin: RequestOrigin) throws -> Date {
        _ = try verifyCurrentPassword(password, userID: session.userID, origin: origin)
        let now = context.clock.now()
        let marked = try context.pool.withConnection { connection in
            try SessionRepository.markAuthenticated(connection, id: session.id, userID: session.userID, at: now)
        }
        guard marked else { throw AccountsError(.invalidToken, "The session ended.") }
        SecurityEvent.log(context.logger, .reauthenticated, outcome: .success, userID: session.userID, origin: origin)
        return now
    }

    /// `DELETE /users/me`: the user and, by cascade, their sessions.
    /// `alsoDelete` runs in the same transaction, after the password check and before the user row goes:
    /// what other modules keep for the user (images) is deleted with it or not at all. Locked as
    /// `changePassword` is. An account without a password (a guest, a provider's account) sends
    /// none, and needs a recent authentication instead (a guest: its session).
    public func deleteAccount(
        password: String?, user: User, session: Session, origin: RequestOrigin,
        alsoDelete: (PostgresConnection) throws -> Void = { _ in }
    ) throws {
        let userID = user.id
        let verifiedHash: String
        if let password {
            verifiedHash = try verifyCurrentPassword(password, userID: userID, origin: origin)
        } else {
            let stored = try withoutPassword(userID: userID, field: "password")
            try sessions.requireRecentAuthentication(session, of: user)
            verifiedHash = stored
        }
        try context.pool.withTransaction { connection in
            guard try UserRepository.passwordHash(connection, id: userID, forUpdate: true) == verifiedHash else {
                throw AccountsError(.invalidPassword, "The password is wrong.")
            }
            try alsoDelete(connection)
            _ = try UserRepository.delete(connection, id: userID)
        }
        SecurityEvent.log(context.logger, .accountDeleted, outcome: .success, userID: userID, origin: origin)
    }

    /// The stored hash of an account without a password (`UserRepository.noPassword`), which a
    /// request that sends none may act on; `field`, the password it would need, is required
    /// (`422`) when the account has one.
    private func withoutPassword(userID: UUID, field: String) throws -> String {
        guard let stored = try context.pool.withConnection({ try UserRepository.passwordHash($0, id: userID) }) else {
            throw AccountsError(.invalidToken, "The user no longer exists.")
        }
        guard stored == UserRepository.noPassword else { throw AccountsError.field(field, .invalidValue, "is required") }
        return stored
    }

    /// Checks a user's current password; returns the verified hash. The route counts the attempt
    /// before this runs (per user), clears the count on a success and gives back one that was
    /// never judged.
    private func verifyCurrentPassword(_ password: String, userID: UUID, origin: RequestOrigin) throws -> String {
        guard let stored = try context.pool.withConnection({ try UserRepository.passwordHash($0, id: userID) }) else {
            throw AccountsError(.invalidToken, "The user no longer exists.")
        }
        let tooLong = password.utf8.count > context.configuration.passwordPolicy.maxBytes
        let valid = try context.onHashingPool(origin) { [hasher = context.hasher] in
            !tooLong && ((try? hasher.verify(password: password, phc: stored))?.isValid ?? false)
        }
        guard valid else {
            SecurityEvent.log(context.logger, .passwordCheckFailed, outcome: .failure, userID: userID, origin: origin)
            throw AccountsError(.invalidPassword, "The current password is wrong.")
        }
        return stored
    }
}
