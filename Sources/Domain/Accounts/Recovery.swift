import FoundationEssentials
import Cryptography
import Outbox
import Postgres

/// Password reset, email verification, the links that confirm or undo a change of address, the
/// export's record and the user's activity (`../shared/API.md`, "Account security and recovery").
public final class Recovery: Sendable {
    private let context: AccountsContext
    private let mail: AccountMail

    init(context: AccountsContext, mail: AccountMail) {
        self.context = context
        self.mail = mail
    }

    /// `POST /users/password-reset`: the same work and answer for a registered and an unknown
    /// address (the route counts the request per address and per client first). One statement
    /// queues the request; `resolvePasswordResets`, in the background, turns it into a token's
    /// slot, a mail and an event if the address is registered (the token itself is made when the
    /// mail is sent). Doing that here would make a registered address's answer slower.
    public func requestPasswordReset(email: EmailAddress, origin: RequestOrigin) throws {
        try context.pool.withConnection { connection in
            try AccountTokenRepository.queueReset(
                connection, email: email, lifetimeSeconds: context.configuration.resetTokenSeconds,
                address: origin.byAdministrator ? nil : origin.address, agent: origin.byAdministrator ? nil : origin.userAgent,
                at: context.clock.now())
        }
    }

    /// Resolves the queued reset requests (every instance, a batch at a time, SKIP LOCKED); returns
    /// how many it took. Runs every `resetResolveIntervalSeconds`; exposed for tests.
    @discardableResult
    public func resolvePasswordResets() throws -> Int {
        let batch = 100
        var taken = 0
        while true {
            let round = try context.backgroundPool.withTransaction { try AccountTokenRepository.resolvePendingResets($0, limit: batch) }
            taken += round
            if round < batch { break }
        }
        if taken > 0 { context.mailQueued() }
        return taken
    }

    /// The normalized address of the account a live reset token belongs to, or nil: what the
    /// confirmation's throttle counts per email (a dead token is counted per client address only).
    public func resetTokenOwner(_ token: String) throws -> String? {
        guard SessionToken.isWellFormed(token) else { return nil }
        return try context.pool.withConnection { connection in
            try AccountTokenRepository.liveUserEmail(connection, hash: SessionToken.hash(of: token), purpose: .passwordReset, at: context.clock.now())
        }
    }

    /// `POST /users/password-reset/confirm`: sets the password, ends every session, clears the
    /// user's throttles and lock, and opens a session for this device, all in one transaction.
    /// A dead token is refused before any hashing; of two requests racing with one token, the
    /// transaction that deletes it first wins and the other is refused. The route counts the
    /// attempts per client address and per email, as sign-ins are.
    ///
    /// With the second factor on, the link proves one factor only: nothing changes yet, the new
    /// password's hash waits in a challenge, and the answer is `401 mfa_required`; the reset
    /// applies with the code (`SecondFactor.finishSignIn`).
    public func confirmPasswordReset(token: String, newPassword: String, origin: RequestOrigin) throws -> IssuedSession {
        let invalid = AccountsError.field("token", .invalidResetToken, "is unknown, used, expired or superseded by a newer one")
        try context.configuration.passwordPolicy.validate(newPassword, field: "newPassword")
        guard try resetTokenOwner(token) != nil else { throw invalid }
        let tokenHash = SessionToken.hash(of: token)
        let passwordHash = try context.onHashingPool(origin) { [hasher = context.hasher] in try hasher.hash(password: newPassword) }
        let sessionToken = try SessionToken.generate()
        let outcome = try context.pool.withTransaction { connection -> SignInStep in
            guard
                let userID = try AccountTokenRepository.consume(connection, hash: tokenHash, purposes: [.passwordReset], at: context.clock.now())?
                    .userID,
                try UserRepository.find(connection, id: userID, forUpdate: true) != nil
            else { throw invalid }
            // A disabled account is not signed in by a reset either (rolled back: the link works once enabled).
            if try AdminRepository.isDisabled(connection, id: userID) {
                throw AccountsError(.accountDisabled, "An administrator disabled this account.")
            }
            if let challenge = try SecondFactor.challenge(
                connection, userID: userID, method: "reset", pendingPasswordHash: passwordHash, context: context)
            {
                return .secondFactor(challenge)
            }
            let user = try applyReset(connection, userID: userID, passwordHash: passwordHash, origin: origin)
            let session = try SessionRepository.insert(
                connection, userID: userID, tokenHash: sessionToken.hash, userAgent: origin.userAgent, lifetime: context.configuration.lifetime,
                at: context.clock.now())
            return .session(IssuedSession(accessToken: sessionToken.text, session: session, user: user))
        }
        let issued = try outcome.session()
        context.mailQueued()
        SecurityEvent.log(context.logger, .passwordReset, outcome: .success, userID: issued.user.id, origin: origin)
        return issued
    }

    /// What a reset does, in the transaction of its confirmation (or of the code that finishes
    /// it): the password set, every session ended, the ways in added while the address was
    /// unverified removed, the address marked verified, the user's throttles cleared, a notice.
    func applyReset(_ connection: PostgresConnection, userID: UUID, passwordHash: String, origin: RequestOrigin) throws -> User {
        guard let stored = try UserRepository.find(connection, id: userID, forUpdate: true) else { throw AccountsError.invalidToken }
        try UserRepository.setPasswordHash(connection, id: userID, hash: passwordHash)
        _ = try SessionRepository.deleteAll(connection, userID: userID)
        // Ways in added while the address was unverified go: whoever added them never proved
        // the mailbox this reset came through.
        let removed =
            try PasskeyRepository.deleteAddedWhileUnverified(connection, userID: userID)
            + IdentityRepository.deleteAddedWhileUnverified(connection, userID: userID)
        if removed > 0 {
            SecurityEvent.log(
                context.logger, .passwordReset, outcome: .success, userID: userID, origin: origin,
                detail: "\(removed) ways in added while the address was unverified removed")
        }
        // The link came through the account's mailbox: that proves the address (reset tokens
        // are voided when it changes).
        guard let storedEmail = stored.email.map(EmailAddress.normalized),
            let user = try UserRepository.markVerified(connection, id: userID, emailNormalized: storedEmail)
        else {
            throw AccountsError.invalidToken
        }
        try ThrottleRepository.clear(connection, key: ThrottleKey(.passwordCheck, .user(userID)))
        try ThrottleRepository.clearSignIn(connection, emailID: storedEmail)
        try mail.passwordChanged(connection, user: user, .passwordReset, origin: origin)
        return user
    }

    /// `POST /users/verify-email`: marks the address the token was sent to as verified, if it is
    /// still the user's; or, for the link of a change of address, applies the change if that
    /// address is still pending (`409 email_taken` when another account took it meanwhile: the
    /// link stays usable).
    public func verifyEmail(token: String, origin: RequestOrigin) throws -> User {
        let invalid = AccountsError.field(
            "token", .invalidVerificationToken, "is unknown, used, expired, or for an address the account no longer has")
        guard SessionToken.isWellFormed(token) else { throw invalid }
        let (user, changed) = try context.pool.withTransaction { connection -> (User, Bool) in
            guard
                let consumed = try AccountTokenRepository.consume(
                    connection, hash: SessionToken.hash(of: token), purposes: [.emailVerification, .emailChange], at: context.clock.now()),
                let bound = consumed.emailNormalized
            else { throw invalid }
            if consumed.purpose == .emailVerification {
                guard let user = try UserRepository.markVerified(connection, id: consumed.userID, emailNormalized: bound) else { throw invalid }
                try ActivityRepository.record(connection, userID: user.id, .emailVerified, origin: origin)
                return (user, false)
            }
            guard let stored = try UserRepository.find(connection, id: consumed.userID, forUpdate: true),
                let pending = stored.pendingEmail.flatMap(EmailAddress.init), pending.normalized == bound
            else { throw invalid }
            guard let user = try UserRepository.claimingAddress({ try UserRepository.applyPendingEmail(connection, id: stored.id, email: pending) })
            else { throw invalid }
            try mail.emailChangeApplied(connection, from: stored, to: user, origin: origin)
            // A guest's sessions are its only credential, and one of them asked for this address,
            // which its mailbox just proved: they count as authenticated now, so that the guest's
            // next step (a first password) needs no other proof, however old the guest.
            if stored.isGuest { try SessionRepository.markAllAuthenticated(connection, userID: user.id, at: context.clock.now()) }
            return (user, true)
        }
        if changed {
            context.mailQueued()
            SecurityEvent.log(context.logger, .emailChanged, outcome: .success, userID: user.id, origin: origin)
        } else {
            SecurityEvent.log(context.logger, .emailVerified, outcome: .success, userID: user.id, origin: origin)
        }
        return user
    }

    /// `POST /users/email-change/undo`: puts back the address an undo link was mailed to, ends
    /// every session, pending change and reset of the user; returns the restored user. The links
    /// of changes made after this one die with it (they would only move the address again); the
    /// older ones stay, so whoever holds the account's first address has the last word.
    public func undoEmailChange(token: String, origin: RequestOrigin) throws -> User {
        let invalid = AccountsError.field("token", .invalidUndoToken, "is unknown, used or expired")
        guard SessionToken.isWellFormed(token) else { throw invalid }
        let user = try context.pool.withTransaction { connection -> User in
            guard
                let consumed = try AccountTokenRepository.consume(
                    connection, hash: SessionToken.hash(of: token), purposes: [.emailChangeUndo], at: context.clock.now()),
                let address = consumed.email.flatMap(EmailAddress.init),
                let stored = try UserRepository.find(connection, id: consumed.userID, forUpdate: true)
            else { throw invalid }
            try AccountTokenRepository.deleteUndoLinks(connection, userID: stored.id, after: consumed.id)
            guard let user = try UserRepository.claimingAddress({ try UserRepository.restoreEmail(connection, id: stored.id, email: address) })
            else { throw invalid }
            _ = try SessionRepository.deleteAll(connection, userID: user.id)
            try AccountTokenRepository.deleteAll(connection, userID: user.id, purposes: [.passwordReset, .emailVerification, .emailChange])
            for email in Set([stored.email.map(EmailAddress.normalized), address.normalized].compactMap { $0 }) {
                try AccountTokenRepository.deletePendingResets(connection, email: email)
            }
            try ActivityRepository.record(connection, userID: user.id, .emailChanged, origin: origin)
            return user
        }
        SecurityEvent.log(context.logger, .emailChangeUndone, outcome: .success, userID: user.id, origin: origin)
        return user
    }

    /// `GET /users/me/export`, before its first byte (the route allows one an hour per user):
    /// recorded in the user's activity, and the account's address gets a notice (an export is
    /// everything a stolen token could take at once).
    public func recordExport(of user: User, origin: RequestOrigin) throws {
        try context.pool.withTransaction { connection in
            try ActivityRepository.record(connection, userID: user.id, .dataExported, origin: origin)
            try OutboxRepository.enqueue(connection, .notice(.dataExported, to: user))
        }
        context.mailQueued()
        SecurityEvent.log(context.logger, .dataExported, outcome: .success, userID: user.id, origin: origin)
    }

    /// `POST /users/me/verify-email`: a new verification mail, voiding the older links.
    public func resendVerification(user: User, origin: RequestOrigin) throws {
        let alreadyVerified = AccountsError(.alreadyVerified, "The email address is verified already.")
        guard !user.emailVerified else { throw alreadyVerified }
        guard user.email != nil else { throw AccountsError(.noAddress, "The account has no address to verify.") }
        try context.pool.withTransaction { connection in
            guard let stored = try UserRepository.find(connection, id: user.id, forUpdate: true) else {
                throw AccountsError(.invalidToken, "The user no longer exists.")
            }
            guard !stored.emailVerified else { throw alreadyVerified }
            try mail.queueVerification(connection, user: stored)
        }
        context.mailQueued()
    }

    /// `GET /users/me/activity`: the user's security events, newest first.
    public func activity(userID: UUID, after cursor: KeysetCursor?, limit: Int) throws -> ActivityPage {
        let events = try context.pool.withConnection {
            try ActivityRepository.page(
                $0, userID: userID, after: cursor, limit: limit + 1, retentionSeconds: context.configuration.activityRetentionSeconds)
        }
        let page = Array(events.prefix(limit))
        let next = events.count > limit ? page.last.map { KeysetCursor(microseconds: $0.atMicroseconds, id: $0.id) } : nil
        return ActivityPage(events: page, next: next)
    }
}
