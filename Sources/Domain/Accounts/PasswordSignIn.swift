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
    /// Cheap refusals come first (the body, a taken email, the address's registration limit), and
    /// the hash runs in the pool's bulk lane, so a flood of registrations never takes the places
    /// that sign-ins of existing users need.
    public func register(_ registration: Registration, origin: RequestOrigin) throws -> IssuedSession {
        let (email, password, firstname, lastname, data) = (
            registration.email, registration.password, registration.firstname,
            registration.lastname, registration.data
        )
        try context.configuration.passwordPolicy.validate(password, field: "password")
        try context.schema.checkFieldCount(data.count)
        // Per address, and per email with the sign-in's rule: many addresses racing to register
        // one address each hash once at most up to that limit before the first one commits.
        let throttle = [
            (key: "register:address:" + origin.throttleAddress, rule: context.configuration.registrationsPerAddress),
            (key: "register:email:" + email.normalized, rule: context.configuration.signInPerEmail),
        ]
        let wait = try context.pool.withConnection { connection -> Int? in
            if try UserRepository.exists(connection, email: email) { throw AccountsError.emailTaken }
            return try context.throttles.acquire(connection, throttle)
        }
        if let wait {
            context.statistics.registrationThrottled.add(1, ordering: .relaxed)
            SecurityEvent.log(context.logger, .registrationThrottled, outcome: .refused, userID: nil, origin: origin)
            throw AccountsError(
                .tooManyAttempts, "Too many registrations from this address or of this email; try again later.", retryAfterSeconds: wait)
        }
        let hash: String
        do {
            hash = try context.onHashingPool(.bulk, origin) { [hasher = context.hasher] in try hasher.hash(password: password) }
        } catch {
            // Refused or abandoned before any hashing: the attempt does not count.
            context.throttles.giveBack(throttle.map(\.key))
            throw error
        }
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
    /// Each attempt is counted against its throttles *before* its hash, for all of them at once,
    /// so that guesses sent together are verified at most up to the limits; a success gives its
    /// attempt back. The session is opened only if the user's hash is still the one verified,
    /// with the row share-locked, so a sign-in that overlapped a password change either commits
    /// first (and the change revokes its session) or finds the new hash and fails.
    public func signIn(_ attempt: SignInAttempt, origin: RequestOrigin) throws -> IssuedSession {
        let (emailText, password) = (attempt.email, attempt.password)
        let invalid = AccountsError(.invalidCredentials, "The email or password is wrong.")
        try context.refuseWhenHashingIsFull(for: origin)
        let email = EmailAddress(emailText)
        // A text that is no valid address can hold anything (U+0000, which PostgreSQL text refuses;
        // kilobytes, past the key index's row limit): it is counted under its digest instead.
        let emailID = email?.normalized ?? "sha256:" + SHA256.hexDigest(emailText.lowercased().utf8)
        let pairKey = "signin:pair:" + emailID + " " + origin.throttleAddress
        let shared = ["signin:email:" + emailID, "signin:address:" + origin.throttleAddress]
        let throttles = [
            (key: pairKey, rule: context.configuration.signInPerEmailAndAddress),
            (key: shared[0], rule: context.configuration.signInPerEmail),
            (key: shared[1], rule: context.configuration.signInPerAddress),
        ]
        let (wait, credentials) = try context.pool.withConnection { connection in
            (
                try context.throttles.acquire(connection, throttles),
                try email.flatMap { try UserRepository.credentials(connection, email: $0) }
            )
        }
        if let wait {
            context.statistics.signInThrottled.add(1, ordering: .relaxed)
            SecurityEvent.log(
                context.logger, .lockedOut, outcome: .refused, userID: credentials?.id, origin: origin,
                detail: "sign-in throttled")
            if let credentials {
                context.recordActivityLater(
                    .lockedOut, userID: credentials.id, origin: origin, oncePer: context.configuration.signInPerEmailAndAddress.windowSeconds)
            }
            throw AccountsError(.tooManyAttempts, "Too many failed sign-ins; try again later.", retryAfterSeconds: wait)
        }
        let tooLong = password.utf8.count > context.configuration.passwordPolicy.maxBytes
        let verdict: PasswordHasher.VerificationResult
        do {
            verdict = try context.onHashingPool(.interactive, origin) { [hasher = context.hasher, logger = context.logger] in
                guard let credentials, !tooLong, credentials.passwordHash != UserRepository.noPassword else {
                    try hasher.dummyVerify(password: tooLong ? "" : password)
                    return .invalid
                }
                do {
                    return try hasher.verify(password: password, phc: credentials.passwordHash)
                } catch {
                    logger.error("stored password hash is unusable", ["user.id": credentials.id.lowercasedText])
                    return .invalid
                }
            }
        } catch {
            // Refused or abandoned before any hashing: the attempt does not count.
            context.throttles.giveBack(throttles.map(\.key))
            throw error
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
            upgraded = try? context.onHashingPool(.interactive, origin) { [hasher = context.hasher] in try hasher.hash(password: password) }
        }
        let token = try SessionToken.generate()
        let issued = try context.pool.withTransaction { connection -> IssuedSession? in
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
            let session = try sessions.openSession(connection, userID: user.id, tokenHash: token.hash, userAgent: origin.userAgent)
            try ActivityRepository.record(connection, userID: user.id, .signedIn, origin: origin, method: .password)
            return IssuedSession(accessToken: token.text, session: session, user: user)
        }
        // After the commit, not inside it: throttle rows are locked in key order by acquisitions,
        // and a transaction holding the user row and some of them could deadlock with one.
        context.throttles.giveBack(shared, clearing: issued == nil ? nil : pairKey)
        guard let issued else {
            SecurityEvent.log(
                context.logger, .signInFailed, outcome: .failure, userID: credentials.id, origin: origin,
                detail: "password changed during sign-in")
            context.recordActivityLater(.signInFailed, userID: credentials.id, origin: origin)
            throw invalid
        }
        SecurityEvent.log(context.logger, .signedIn, outcome: .success, userID: credentials.id, origin: origin)
        return issued
    }
}
