import Cryptography
import FoundationEssentials
import Postgres

/// The signed-in user's password: changing it, and deleting the account with it, both after a
/// check of the current one that wrong guesses lock (`Configuration.passwordChecks`).
public final class Passwords: Sendable {
    private let context: AccountsContext
    private let mail: AccountMail

    init(context: AccountsContext, mail: AccountMail) {
        self.context = context
        self.mail = mail
    }

    /// `POST /users/me/password`: verifies the old password, stores the new hash, revokes every
    /// other session and replaces the calling one, all in one transaction.
    /// A locked user's attempt is refused when its check is counted, before any hashing; so that
    /// it gets 429 whatever its body says, the caller checks `checkPasswordLock` before reading it.
    public func changePassword(_ change: PasswordChange, session: Session, origin: RequestOrigin) throws -> (IssuedSession, revokedSessions: Int) {
        let (old, new) = (change.oldPassword, change.newPassword)
        if let confirm = change.confirmPassword, confirm != new {
            throw AccountsError.field("confirmPassword", .passwordMismatch, "does not match newPassword")
        }
        try context.configuration.passwordPolicy.validate(new, field: "newPassword")
        if old == new { throw AccountsError.field("newPassword", .passwordUnchanged, "must differ from the old password") }
        let verifiedHash = try verifyCurrentPassword(old, userID: session.userID, origin: origin)
        let hash = try context.onHashingPool(.interactive, origin) { [hasher = context.hasher] in try hasher.hash(password: new) }
        let token = try SessionToken.generate()
        let changed = try context.pool.withTransaction { connection in
            // The row lock orders concurrent changes; a hash that moved since it was verified
            // means another change won, so this one's old password is no longer right.
            guard try UserRepository.passwordHash(connection, id: session.userID, forUpdate: true) == verifiedHash else {
                throw AccountsError(.invalidPassword, "The current password is wrong.")
            }
            try UserRepository.setPasswordHash(connection, id: session.userID, hash: hash)
            try context.throttles.clear(connection, key: Throttles.passwordKey(session.userID))
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

    /// `DELETE /users/me`: the user and, by cascade, their sessions.
    /// `alsoDelete` runs in the same transaction, after the password check and before the user row goes:
    /// what other modules keep for the user (images) is deleted with it or not at all. Locked as
    /// `changePassword` is.
    public func deleteAccount(
        password: String, userID: UUID, origin: RequestOrigin,
        alsoDelete: (PostgresConnection) throws -> Void = { _ in }
    ) throws {
        let verifiedHash = try verifyCurrentPassword(password, userID: userID, origin: origin)
        try context.pool.withTransaction { connection in
            guard try UserRepository.passwordHash(connection, id: userID, forUpdate: true) == verifiedHash else {
                throw AccountsError(.invalidPassword, "The password is wrong.")
            }
            try alsoDelete(connection)
            _ = try UserRepository.delete(connection, id: userID)
            try context.throttles.clear(connection, key: Throttles.passwordKey(userID))
        }
        SecurityEvent.log(context.logger, .accountDeleted, outcome: .success, userID: userID, origin: origin)
    }

    /// Throws `too_many_attempts` while the user's password checks are locked (a read: the
    /// attempt is counted by `verifyCurrentPassword`, once the body is known to be worth checking).
    public func checkPasswordLock(userID: UUID, origin: RequestOrigin) throws {
        let locked = try context.throttles.lockedFor(key: Throttles.passwordKey(userID), rule: context.configuration.passwordChecks)
        if let locked { throw passwordsLocked(userID: userID, origin: origin, retryAfter: locked) }
    }

    private func passwordsLocked(userID: UUID, origin: RequestOrigin, retryAfter: Int) -> AccountsError {
        context.statistics.passwordChecksThrottled.add(1, ordering: .relaxed)
        SecurityEvent.log(context.logger, .lockedOut, outcome: .refused, userID: userID, origin: origin, detail: "password checks locked")
        context.recordActivity(.lockedOut, userID: userID, origin: origin, oncePer: context.configuration.passwordChecks.windowSeconds)
        return AccountsError(.tooManyAttempts, "Too many wrong passwords; try again later.", retryAfterSeconds: retryAfter)
    }

    /// Checks a user's current password, counting the attempt before hashing (so parallel guesses
    /// are verified at most up to the limit); returns the verified hash. A success clears the
    /// count in the caller's transaction; a refused or abandoned hash gives the attempt back.
    private func verifyCurrentPassword(_ password: String, userID: UUID, origin: RequestOrigin) throws -> String {
        let throttle = [(key: Throttles.passwordKey(userID), rule: context.configuration.passwordChecks)]
        let (wait, stored) = try context.pool.withConnection { connection in
            (try context.throttles.acquire(connection, throttle), try UserRepository.passwordHash(connection, id: userID))
        }
        if let wait { throw passwordsLocked(userID: userID, origin: origin, retryAfter: wait) }
        guard let stored else { throw AccountsError(.invalidToken, "The user no longer exists.") }
        let tooLong = password.utf8.count > context.configuration.passwordPolicy.maxBytes
        let valid: Bool
        do {
            valid = try context.onHashingPool(.interactive, origin) { [hasher = context.hasher] in
                !tooLong && ((try? hasher.verify(password: password, phc: stored))?.isValid ?? false)
            }
        } catch {
            context.throttles.giveBack(throttle.map(\.key))
            throw error
        }
        guard valid else {
            SecurityEvent.log(context.logger, .passwordCheckFailed, outcome: .failure, userID: userID, origin: origin)
            throw AccountsError(.invalidPassword, "The current password is wrong.")
        }
        return stored
    }
}
