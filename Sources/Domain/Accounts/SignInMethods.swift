import Cryptography
import FoundationEssentials
import Outbox
import Postgres

/// The ways in besides the password, and never without one: Sign in with Apple and Google
/// (accounts found by the provider's subject, made on the first sign-in, linked to an existing
/// account only when both sides vouch for the address) and passkeys (`SignInMethods+Passkeys`).
public final class SignInMethods: Sendable {
    let context: AccountsContext
    let sessions: Sessions
    let mail: AccountMail

    init(context: AccountsContext, sessions: Sessions, mail: AccountMail) {
        self.context = context
        self.sessions = sessions
        self.mail = mail
    }

    /// `POST /users/signin/{provider}`: `verify` checks the ID token (the caller's `KeySetCache`).
    /// The route counts the attempt per client address first, so that a flood of forged tokens is
    /// throttled like wrong passwords, and gives a success's back.
    ///
    /// The identity's account signs in. Without one, an account holding the token's address is
    /// linked when the provider verified the address and so did the account (`409
    /// account_exists` otherwise: its owner signs in and links from there); else a new account is
    /// made, without a password, its address verified when the provider says so. Two first sign-ins
    /// racing end in one account: the loser's transaction finds the winner's identity on its retry.
    ///
    /// The token is used up with the sign-in: its nonce, which this server must have issued
    /// (`issueIDTokenNonce`) unless `Configuration.idTokenNonceRequired` is off, and the token
    /// itself, refused again on every instance until it expires (`useUp`).
    public func signIn(
        with provider: IdentityProvider, nonce: String?, origin: RequestOrigin, verifying verify: () throws -> ProviderIdentity
    ) throws -> IssuedSession {
        let identity: ProviderIdentity
        do {
            identity = try verify()
        } catch let error as AccountsError where error.code == .invalidIDToken {
            context.statistics.signInFailures.add(1, ordering: .relaxed)
            SecurityEvent.log(
                context.logger, .signInFailed, outcome: .failure, userID: nil, origin: origin, detail: "\(provider.rawValue): \(error.detail)")
            throw error
        }
        let token = try SessionToken.generate()
        let (step, outcome) = try retryingOnce { () throws -> (SignInStep, SignInOutcome) in
            try context.pool.withTransaction { connection in
                try useUp(connection, identity, nonce: nonce, refusing: { AccountsError(.invalidIDToken, "The ID token was refused: \($0).") })
                return try signIn(connection, identity, tokenHash: token.hash, tokenText: token.text, origin: origin)
            }
        }
        if outcome != .existing { context.mailQueued() }
        let issued = try step.session()
        let detail = "\(provider.rawValue)" + (outcome == .created ? ", account created" : outcome == .linked ? ", identity linked" : "")
        SecurityEvent.log(
            context.logger, outcome == .created ? .registered : .signedIn, outcome: .success, userID: issued.user.id, origin: origin, detail: detail)
        return issued
    }

    private enum SignInOutcome { case existing, linked, created }

    private func signIn(
        _ connection: PostgresConnection, _ identity: ProviderIdentity, tokenHash: [UInt8], tokenText: String, origin: RequestOrigin
    ) throws -> (SignInStep, SignInOutcome) {
        func issue(_ user: User) throws -> SignInStep {
            if try AdminRepository.isDisabled(connection, id: user.id) {
                throw AccountsError(.accountDisabled, "An administrator disabled this account.")
            }
            // With the second factor on, the identity proved one factor.
            if let challenge = try SecondFactor.challenge(connection, userID: user.id, method: identity.provider.rawValue, context: context) {
                return .secondFactor(challenge)
            }
            let session = try sessions.openSession(connection, userID: user.id, tokenHash: tokenHash, userAgent: origin.userAgent)
            try ActivityRepository.record(
                connection, userID: user.id, .signedIn, origin: origin, method: identity.provider == .apple ? .apple : .google)
            return .session(IssuedSession(accessToken: tokenText, session: session, user: user))
        }
        if let userID = try IdentityRepository.use(connection, provider: identity.provider, subject: identity.subject),
            let user = try UserRepository.find(connection, id: userID)
        {
            return (try issue(user), .existing)
        }
        guard let email = identity.email.flatMap(EmailAddress.init) else {
            throw AccountsError(.invalidIDToken, "The ID token carries no usable email address.")
        }
        if let existing = try UserRepository.find(connection, email: email) {
            guard identity.emailVerified, existing.emailVerified else {
                throw AccountsError(
                    .accountExists,
                    "An account with this email address exists. Sign in to it, then link \(identity.provider.displayName) from its settings.")
            }
            try link(connection, identity, to: existing, origin: origin)
            return (try issue(existing), .linked)
        }
        var user = try UserRepository.insert(
            connection, email: email, passwordHash: UserRepository.noPassword, firstname: identity.givenName ?? "",
            lastname: identity.familyName ?? "", data: [:])
        if identity.emailVerified, let verified = try UserRepository.markVerified(connection, id: user.id, emailNormalized: email.normalized) {
            user = verified
        }
        guard try IdentityRepository.insert(connection, userID: user.id, identity, used: true) != nil else { throw RaceLost() }
        if !user.emailVerified { try mail.queueVerification(connection, user: user) }
        return (try issue(user), .created)
    }

    /// `POST /users/me/identities`: links the identity `verify` returns to the signed-in
    /// user (the same identity again changes nothing); `409 identity_taken` when another account has it.
    public func linkIdentity(
        userID: UUID, nonce: String?, origin: RequestOrigin, verifying verify: () throws -> ProviderIdentity
    ) throws -> (identity: LinkedIdentity, isNew: Bool) {
        let identity: ProviderIdentity
        do {
            identity = try verify()
        } catch let error as AccountsError where error.code == .invalidIDToken {
            SecurityEvent.log(context.logger, .identityLinked, outcome: .failure, userID: userID, origin: origin, detail: error.detail)
            throw error
        }
        let (linked, isNew) = try retryingOnce { () throws -> (LinkedIdentity, Bool) in
            try context.pool.withTransaction { connection in
                // Not a 401: the session is good, and a client that hears 401 signs its user out.
                try useUp(connection, identity, nonce: nonce, refusing: { AccountsError.field("idToken", .invalidIDToken, "was refused: \($0)") })
                if let (owner, found) = try IdentityRepository.find(connection, provider: identity.provider, subject: identity.subject) {
                    guard owner == userID else {
                        throw AccountsError(.identityTaken, "This \(identity.provider.displayName) account is linked to another account.")
                    }
                    return (found, false)
                }
                guard let user = try UserRepository.find(connection, id: userID) else { throw AccountsError.invalidToken }
                return (try link(connection, identity, to: user, origin: origin), true)
            }
        }
        if isNew {
            context.mailQueued()
            SecurityEvent.log(context.logger, .identityLinked, outcome: .success, userID: userID, origin: origin, detail: identity.provider.rawValue)
        }
        return (linked, isNew)
    }

    /// `DELETE /users/me/identities/{id}`: never the last way in. An account without a password
    /// or a passkey keeps its last identity (`409 last_sign_in_method`); the user's row is locked
    /// first, so two removals at once cannot both see another one left. An administrator (`by`,
    /// the console) may unlink the last one; the user gets in again by a password reset.
    public func unlinkIdentity(id: UUID, userID: UUID, origin: RequestOrigin, by admin: Admin? = nil) throws {
        try removeWayIn(.identity(id), userID: userID, origin: origin, by: admin)
    }

    /// `POST /users/sign-in-methods/remove`: the link the notice of a new way in carried removes
    /// that way in (when it is still there: the user may have removed it already), ends every
    /// session of the user, and is used up. It works even on the account's last way in: the
    /// mailbox that holds the link can reset the password. `422 invalid_token` for a link that is
    /// unknown, used or expired.
    public func removeWayIn(byLink token: String, origin: RequestOrigin) throws {
        let invalid = AccountsError.field("token", .invalidToken, "is unknown, used or expired")
        guard SessionToken.isWellFormed(token) else { throw invalid }
        let (userID, removed) = try context.pool.withTransaction { connection -> (UUID, (SecurityEvent.Kind, String)?) in
            guard
                let consumed = try AccountTokenRepository.consume(
                    connection, hash: SessionToken.hash(of: token), purposes: [.signInMethodRemoval], at: context.clock.now()),
                let target = consumed.target, let user = try UserRepository.find(connection, id: consumed.userID, forUpdate: true)
            else { throw invalid }
            var removed: (SecurityEvent.Kind, String)?
            switch target {
            case .passkey(let id):
                if let passkey = try PasskeyRepository.delete(connection, id: id, userID: user.id) {
                    try ActivityRepository.record(connection, userID: user.id, .passkeyRemoved, origin: origin)
                    removed = (.passkeyRemoved, passkey.id.lowercasedText)
                }
            case .identity(let id):
                if let identity = try IdentityRepository.delete(connection, id: id, userID: user.id) {
                    try ActivityRepository.record(connection, userID: user.id, .identityUnlinked, origin: origin)
                    removed = (.identityUnlinked, identity.provider.rawValue)
                }
            }
            _ = try SessionRepository.deleteAll(connection, userID: user.id)
            return (user.id, removed)
        }
        if let (event, detail) = removed {
            SecurityEvent.log(
                context.logger, event, outcome: .success, userID: userID, origin: origin, detail: "by the link mailed when it was added: \(detail)")
        }
        SecurityEvent.log(
            context.logger, .sessionRevoked, outcome: .success, userID: userID, origin: origin, detail: "every session, by a removal link")
    }

    /// Links and tells the account's address: a new way into the account is news its owner must hear.
    @discardableResult
    private func link(_ connection: PostgresConnection, _ identity: ProviderIdentity, to user: User, origin: RequestOrigin) throws -> LinkedIdentity {
        guard let linked = try IdentityRepository.insert(connection, userID: user.id, identity, used: false) else { throw RaceLost() }
        try ActivityRepository.record(connection, userID: user.id, .identityLinked, origin: origin)
        try mail.wayInAdded(connection, user: user, method: identity.provider.displayName, .identity(linked.id))
        return linked
    }

    /// Another request linked the identity, or took the address, between this one's read and its
    /// write (a unique index said so): the whole transaction runs once more and sees it.
    private struct RaceLost: Error {}

    /// `POST /users/me/reauthenticate` with an ID token: records that the session's holder proved
    /// an identity linked to the account now, and returns that time. The token's nonce and its
    /// single use are checked as at sign-in; its refusals name `idToken` (`422`: the session is
    /// good, and a client that hears 401 signs its user out).
    public func reauthenticate(
        session: Session, nonce: String?, origin: RequestOrigin, verifying verify: () throws -> ProviderIdentity
    ) throws -> Date {
        let identity: ProviderIdentity
        do {
            identity = try verify()
        } catch let error as AccountsError where error.code == .invalidIDToken {
            throw AccountsError.field("idToken", .invalidIDToken, error.detail)
        }
        let now = context.clock.now()
        try context.pool.withTransaction { connection in
            try useUp(connection, identity, nonce: nonce, refusing: { AccountsError.field("idToken", .invalidIDToken, "was refused: \($0)") })
            guard let (owner, _) = try IdentityRepository.find(connection, provider: identity.provider, subject: identity.subject),
                owner == session.userID
            else {
                throw AccountsError.field("idToken", .invalidIDToken, "is not of an identity linked to this account")
            }
            guard try SessionRepository.markAuthenticated(connection, id: session.id, userID: session.userID, at: now) else {
                throw AccountsError(.invalidToken, "The session ended.")
            }
        }
        SecurityEvent.log(
            context.logger, .reauthenticated, outcome: .success, userID: session.userID, origin: origin, detail: identity.provider.rawValue)
        return now
    }

    /// `POST /users/signin/nonce`: a nonce for one ID token (32 random bytes, base64url), live for
    /// `Configuration.idTokenNonceSeconds`; only its SHA-256 is kept. The app gives the provider
    /// the nonce's SHA-256 in lowercase hex, and the server the nonce beside the token.
    public func issueIDTokenNonce() throws -> (nonce: String, expiresAt: Date) {
        let nonce = Base64URL.encode(try SecureRandom.bytes(count: 32))
        let expiresAt = context.clock.now().addingTimeInterval(context.configuration.idTokenNonceSeconds)
        try context.pool.withConnection { try IDTokenFreshnessRepository.insertNonce($0, hash: SHA256.hash(Array(nonce.utf8)), expiresAt: expiresAt) }
        return (nonce, expiresAt)
    }

    /// In the sign-in's (or link's) transaction, and rolled back with it: the nonce, when this
    /// server issued it, is used up (one it did not issue, or none, is refused while nonces are
    /// required); the token is recorded as accepted, and refused if it was before.
    private func useUp(
        _ connection: PostgresConnection, _ identity: ProviderIdentity, nonce: String?, refusing: (String) -> AccountsError
    ) throws {
        let required = context.configuration.idTokenNonceRequired
        if let nonce {
            let issued = try IDTokenFreshnessRepository.consumeNonce(connection, hash: SHA256.hash(Array(nonce.utf8)), at: context.clock.now())
            if required, !issued { throw refusing("its nonce was not issued by this server, or was used or expired") }
        } else if required {
            throw refusing("it carries no nonce from POST /users/signin/nonce")
        }
        guard try IDTokenFreshnessRepository.markUsed(connection, tokenHash: identity.tokenHash, expiresAt: identity.expiresAt) else {
            throw refusing("it was used before")
        }
    }

    private func retryingOnce<T>(_ body: () throws -> T) throws -> T {
        func again() throws -> T {
            do { return try body() } catch is RaceLost {
                throw AccountsError(.overloaded, "Too many changes of this account at once; try again.", retryAfterSeconds: 1)
            }
        }
        do {
            return try body()
        } catch is RaceLost {
            return try again()
        } catch let error as PostgresError where error.sqlState == .uniqueViolation {
            return try again()
        }
    }

    // MARK: - Every way in

    /// The user's ways to sign in: whether they have a password, their identities and passkeys.
    public func signInMethods(of userID: UUID) throws -> (hasPassword: Bool, identities: [LinkedIdentity], passkeys: [Passkey]) {
        try context.pool.withConnection { connection in
            guard let hash = try UserRepository.passwordHash(connection, id: userID) else {
                throw AccountsError(.notFound, "There is no user with this id.")
            }
            return (
                hash != UserRepository.noPassword, try IdentityRepository.list(connection, userID: userID),
                try PasskeyRepository.list(connection, userID: userID)
            )
        }
    }

    /// A way in besides the password.
    enum WayIn {
        case identity(UUID)
        case passkey(UUID)
    }

    /// Removes a linked identity or a passkey of the user, in one transaction with the user's row
    /// locked: refused when it is the last way in (unless an administrator does it, audited), then
    /// the user's activity and a notice to their address.
    func removeWayIn(_ way: WayIn, userID: UUID, origin: RequestOrigin, by admin: Admin?) throws {
        let (event, detail) = try context.pool.withTransaction { connection -> (SecurityEvent.Kind, String) in
            let ways = try waysIn(connection, userID: userID)
            let notFound: AccountsError
            switch way {
            case .identity(let id):
                notFound = AccountsError(.notFound, "No such identity.")
                guard ways.identities.contains(where: { $0.id == id }) else { throw notFound }
            case .passkey(let id):
                notFound = AccountsError(.notFound, "No such passkey.")
                guard ways.passkeys.contains(where: { $0.id == id }) else { throw notFound }
            }
            guard ways.count > 1 || admin != nil else { throw Self.lastWayIn }
            let (method, chosenMethod, detail, activity, action, event):
                (String, String?, String, ActivityEvent.Kind, AuditAction, SecurityEvent.Kind)
            switch way {
            case .identity(let id):
                guard let removed = try IdentityRepository.delete(connection, id: id, userID: userID) else { throw notFound }
                (method, chosenMethod, detail, activity, action, event) = (
                    removed.provider.displayName, nil, removed.provider.rawValue, .identityUnlinked, .userIdentityUnlink, .identityUnlinked
                )
            case .passkey(let id):
                guard let removed = try PasskeyRepository.delete(connection, id: id, userID: userID) else { throw notFound }
                (method, chosenMethod, detail, activity, action, event) = (
                    "A passkey", "A passkey (\(removed.name))", removed.id.lowercasedText, .passkeyRemoved, .userPasskeyRemove, .passkeyRemoved
                )
            }
            if let admin {
                try AdminRepository.audit(connection, admin: admin, action: action, target: userID, address: origin.address)
            }
            try ActivityRepository.record(connection, userID: userID, activity, origin: origin)
            try OutboxRepository.enqueue(
                connection, .notice(.signInMethodRemoved, to: ways.user, ["method": method], chosen: chosenMethod.map { ["method": $0] } ?? [:]))
            return (event, detail)
        }
        context.mailQueued()
        SecurityEvent.log(context.logger, event, outcome: .success, userID: userID, origin: origin, detail: detail)
    }

    static let lastWayIn = AccountsError(
        .lastSignInMethod, "This is the account's last way to sign in: set a password (reset it by mail) or add another first.")

    /// The user's ways to sign in, with the user's row locked (two removals at once cannot both
    /// see another one left).
    func waysIn(_ connection: PostgresConnection, userID: UUID) throws -> (user: User, count: Int, identities: [LinkedIdentity], passkeys: [Passkey])
    {
        guard let user = try UserRepository.find(connection, id: userID, forUpdate: true),
            let hash = try UserRepository.passwordHash(connection, id: userID)
        else { throw AccountsError(.notFound, "There is no user with this id.") }
        let identities = try IdentityRepository.list(connection, userID: userID)
        let passkeys = try PasskeyRepository.list(connection, userID: userID)
        return (user, (hash == UserRepository.noPassword ? 0 : 1) + identities.count + passkeys.count, identities, passkeys)
    }
}
