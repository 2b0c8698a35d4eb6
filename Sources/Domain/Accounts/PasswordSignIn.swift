import Cryptography
import FoundationEssentials
import JSON
import Postgres

/// The way in by email and password: registering, which signs the new user in, and signing in.
public final class PasswordSignIn: Sendable {
    private let context: AccountsContext
    private let sessions: Sessions
    private let mail: AccountMail

    init(context: AccountsContext, sessions: Sessions, mail: AccountMail) {
        self.context = context
        self.sessions = sessions
        self.mail = mail
    }

    /// `POST /users`: creates the user and signs them in.
    ///
    /// Cheap refusals come first (the body, a taken email), and the hash runs in the hashing lane
    /// the route declares (the bulk one), so that a flood of registrations never takes the places
    /// that sign-ins of existing users need.
    public func register(_ registration: Registration, origin: RequestOrigin) throws -> IssuedSession {
        let (email, password, firstname, lastname, data) = (
            registration.email, registration.password, registration.firstname,
            registration.lastname, registration.data
        )
        try context.configuration.passwordPolicy.validate(password, field: "password")
        try context.schema.checkFieldCount(data.count)
        if try context.pool.withConnection({ try UserRepository.exists($0, email: email) }) { throw AccountsError.emailTaken }
        let hash = try context.onHashingPool(origin) { [hasher = context.hasher] in try hasher.hash(password: password) }
        let token = try SessionToken.generate()
        let issued = try context.pool.withTransaction { connection in
            let fields = try context.schema.validate(Array(data), connection)
            var user = User(
                id: UUID(), email: email.value, firstname: firstname, lastname: lastname, emailVerified: false,
                createdAt: Date(), updatedAt: Date(), data: JSONObject(), version: 1)
            FieldSchema.apply(fields, to: &user.data)
            try context.schema.checkDocumentSize(user)
            user = try UserRepository.claimingAddress {
                try UserRepository.insert(connection, email: email, passwordHash: hash, firstname: firstname, lastname: lastname, data: user.data)
            }
            let session = try SessionRepository.insert(
                connection, userID: user.id, tokenHash: token.hash,
                userAgent: origin.userAgent, lifetime: context.configuration.lifetime, at: context.clock.now())
            try mail.queueVerification(connection, user: user)
            return IssuedSession(accessToken: token.text, session: session, user: user)
        }
        context.mailQueued()
        SecurityEvent.log(context.logger, .registered, outcome: .success, userID: issued.user.id, origin: origin)
        return issued
    }

    /// `POST /users/signin`: the same answer, after the same work, for an unknown email and a wrong password.
    ///
    /// The route counts each attempt against its throttles before this runs, and gives a
    /// success's back. The session is opened only if the user's hash is still the one verified,
    /// with the row share-locked, so a sign-in that overlapped a password change either commits
    /// first (and the change revokes its session) or finds the new hash and fails.
    public func signIn(_ attempt: SignInAttempt, origin: RequestOrigin) throws -> IssuedSession {
        let (emailText, password) = (attempt.email, attempt.password)
        let invalid = AccountsError(.invalidCredentials, "The email or password is wrong.")
        let email = EmailAddress(emailText)
        let credentials = try email.flatMap { email in try context.pool.withConnection { try UserRepository.credentials($0, email: email) } }
        let tooLong = password.utf8.count > context.configuration.passwordPolicy.maxBytes
        let verdict = try context.onHashingPool(origin) { [hasher = context.hasher, logger = context.logger] in
            guard let credentials, !tooLong, credentials.passwordHash != UserRepository.noPassword else {
                try hasher.dummyVerify(password: tooLong ? "" : password)
                return PasswordHasher.VerificationResult.invalid
            }
            do {
                return try hasher.verify(password: password, phc: credentials.passwordHash)
            } catch {
                logger.error("stored password hash is unusable", ["user.id": credentials.id.lowercasedText])
                return .invalid
            }
        }
        guard let credentials, verdict.isValid else {
            context.statistics.signInFailures.add(1, ordering: .relaxed)
            SecurityEvent.log(
                context.logger, .signInFailed, outcome: .failure, userID: credentials?.id, origin: origin,
                detail: credentials == nil ? "unknown email" : "wrong password")
            // Written after the answer: a known email's refusal must come after the same work as
            // an unknown one's, not after a committed row more.
            if let credentials { context.recordActivityLater(.signInFailed, userID: credentials.id, origin: origin) }
            throw invalid
        }
        var upgraded: String?
        if verdict == .validNeedsRehash {
            upgraded = try? context.onHashingPool(origin) { [hasher = context.hasher] in try hasher.hash(password: password) }
        }
        let token = try SessionToken.generate()
        let step = try context.pool.withTransaction { connection -> SignInStep? in
            guard
                let user = try UserRepository.find(
                    connection, id: credentials.id, passwordHash: credentials.passwordHash,
                    forUpdate: upgraded != nil)
            else {
                // The password changed (or the account went) while this one was being checked.
                return nil
            }
            if try AdminRepository.isDisabled(connection, id: user.id) {
                throw AccountsError(.accountDisabled, "An administrator disabled this account.")
            }
            if let upgraded {
                try UserRepository.upgradePasswordHash(connection, id: credentials.id, from: credentials.passwordHash, to: upgraded)
            }
            // With the second factor on, the password proved one factor: a challenge, no session.
            if let challenge = try SecondFactor.challenge(connection, userID: user.id, method: "password", context: context) {
                return .secondFactor(challenge)
            }
            let session = try sessions.openSession(connection, userID: user.id, tokenHash: token.hash, userAgent: origin.userAgent)
            try ActivityRepository.record(connection, userID: user.id, .signedIn, origin: origin, method: .password)
            return .session(IssuedSession(accessToken: token.text, session: session, user: user))
        }
        guard let step else {
            SecurityEvent.log(
                context.logger, .signInFailed, outcome: .failure, userID: credentials.id, origin: origin,
                detail: "password changed during sign-in")
            context.recordActivityLater(.signInFailed, userID: credentials.id, origin: origin)
            throw invalid
        }
        let issued = try step.session()
        SecurityEvent.log(context.logger, .signedIn, outcome: .success, userID: credentials.id, origin: origin)
        return issued
    }
}
