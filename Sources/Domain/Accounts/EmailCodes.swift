import Cryptography
import FoundationEssentials
import Outbox
import Postgres
import Time

/// The mailbox as a way in: a sign-in by an 8-digit code mailed to the account's address (10
/// minutes), and a reauthentication by one (`../shared/API.md`, "Guests and codes by mail").
///
/// - A code is made when its mail is sent and kept only as a SHA-256 (`EmailCodeRepository.hash`).
/// - It works once; five wrong codes delete it; a newer code replaces an older one.
/// - A sign-in's request writes the same queued row whether or not the address is registered (the
///   answer and its timing tell nothing); a background round makes the slot and the mail.
/// - A right code proves the mailbox: the address is marked verified, and what was added while it
///   was not (a password, passkeys, identities: whoever registered the address never proved it)
///   goes, as a reset does. With `emailCodeSignup`, a code for an unknown address makes the account.
public final class EmailCodes: Sendable {
    /// Wrong codes that end a code.
    static let failuresPerCode = 5

    private let context: AccountsContext
    private let sessions: Sessions
    private let mail: AccountMail

    init(context: AccountsContext, sessions: Sessions, mail: AccountMail) {
        self.context = context
        self.sessions = sessions
        self.mail = mail
    }

    /// Whether `code` could be one: 8 ASCII digits.
    static func isWellFormed(_ code: String) -> Bool {
        code.utf8.count == 8 && code.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// 8 uniformly random digits.
    static func generate() throws -> String {
        while true {
            let bytes = try SecureRandom.bytes(count: 4)
            let value = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            // The largest multiple of 10^8 below 2^32: no digit is likelier than another.
            guard value < 4_200_000_000 else { continue }
            let digits = String(value % 100_000_000)
            return String(repeating: "0", count: 8 - digits.count) + digits
        }
    }

    /// The code of a queued mail, made as it is sent: its hash goes into the slot and is
    /// committed before this returns; nil when the slot is gone (used, replaced, expired).
    public static func mintMailCode(slot: Int64, on pool: PostgresPool, clock: WallClock) throws -> String? {
        let code = try generate()
        let minted = try pool.withConnection {
            try EmailCodeRepository.mint($0, slot: slot, hash: EmailCodeRepository.hash(slot: slot, code: code), at: clock.now())
        }
        return minted ? code : nil
    }

    /// Whether `code` is the live code's (compared in constant time); a wrong one is counted, and
    /// the fifth deletes the code.
    private static func check(_ connection: PostgresConnection, _ live: EmailCodeRepository.Live, _ code: String) throws -> Bool {
        if let stored = live.codeHash, ConstantTime.equals(stored, EmailCodeRepository.hash(slot: live.id, code: code)) { return true }
        try EmailCodeRepository.countFailure(connection, id: live.id, limit: failuresPerCode)
        return false
    }

    // MARK: - Sign-in

    /// `POST /users/signin/email-code`: one statement, the same for any address (the route
    /// counts the request per client address and per email first).
    public func requestSignInCode(email: EmailAddress) throws {
        try context.pool.withConnection { connection in
            try EmailCodeRepository.queueSignInRequest(
                connection, email: email, signup: context.configuration.emailCodeSignup,
                lifetimeSeconds: context.configuration.emailCodeSeconds, at: context.clock.now())
        }
    }

    /// Resolves the queued requests (every instance, a batch at a time); returns how many it took.
    @discardableResult
    public func resolveSignInRequests() throws -> Int {
        let batch = 100
        var taken = 0
        while true {
            let round = try context.backgroundPool.withTransaction { try EmailCodeRepository.resolveSignInRequests($0, limit: batch) }
            taken += round
            if round < batch { break }
        }
        if taken > 0 { context.mailQueued() }
        return taken
    }

    /// `POST /users/signin/email-code/verify`: a session (or, with the second factor on, `401
    /// mfa_required`); `401 invalid_code` for a wrong, used, expired or replaced code, and for an
    /// address without one. Of requests racing with one code, one wins (the row is locked).
    public func signIn(email: EmailAddress, code: String, origin: RequestOrigin) throws -> IssuedSession {
        let invalid = AccountsError(.invalidCode, "The code is wrong, used, expired or replaced by a newer one: ask for a new one.")
        guard Self.isWellFormed(code) else { throw invalid }
        let sessionToken = try SessionToken.generate()
        enum Outcome {
            case step(SignInStep, created: Bool)
            case wrong(userID: UUID?)
            case dead
        }
        let outcome = try context.pool.withTransaction { connection -> Outcome in
            guard let live = try EmailCodeRepository.liveSignIn(connection, email: email, at: context.clock.now()) else { return .dead }
            guard try Self.check(connection, live, code) else {
                if let userID = live.userID { try ActivityRepository.record(connection, userID: userID, .signInFailed, origin: origin) }
                return .wrong(userID: live.userID)
            }
            try EmailCodeRepository.delete(connection, id: live.id)
            var created = false
            let user: User
            if let found = try UserRepository.find(connection, email: email) {
                // The code's account, or (signup) the one that took the address since: the
                // mailbox's owner proved it either way.
                guard live.userID == nil || live.userID == found.id else { return .dead }
                user = found
            } else if live.userID == nil, context.configuration.emailCodeSignup {
                user = try UserRepository.claimingAddress { try UserRepository.insertByMailbox(connection, email: email) }
                created = true
            } else {
                // The account went, or moved to another address, since the code was made.
                return .dead
            }
            if try AdminRepository.isDisabled(connection, id: user.id) {
                throw AccountsError(.accountDisabled, "An administrator disabled this account.")
            }
            let proven = try proveMailbox(connection, user: user, origin: origin)
            if let challenge = try SecondFactor.challenge(connection, userID: user.id, method: "email_code", context: context) {
                return .step(.secondFactor(challenge), created: false)
            }
            let session = try sessions.openSession(connection, userID: user.id, tokenHash: sessionToken.hash, userAgent: origin.userAgent)
            try ActivityRepository.record(connection, userID: user.id, .signedIn, origin: origin, method: .emailCode)
            return .step(.session(IssuedSession(accessToken: sessionToken.text, session: session, user: proven)), created: created)
        }
        switch outcome {
        case .dead:
            context.statistics.signInFailures.add(1, ordering: .relaxed)
            SecurityEvent.log(context.logger, .signInFailed, outcome: .failure, userID: nil, origin: origin, detail: "no live code")
            throw invalid
        case .wrong(let userID):
            context.statistics.signInFailures.add(1, ordering: .relaxed)
            SecurityEvent.log(context.logger, .signInFailed, outcome: .failure, userID: userID, origin: origin, detail: "wrong code")
            throw invalid
        case .step(let step, let created):
            let issued = try step.session()
            context.mailQueued()
            SecurityEvent.log(
                context.logger, created ? .registered : .signedIn, outcome: .success, userID: issued.user.id, origin: origin, detail: "email code")
            return issued
        }
    }

    /// A right code came through the account's mailbox: the address is verified, and when it was
    /// not, the ways in added meanwhile go with every other session (whoever added them never
    /// proved the mailbox; Firebase drops an unverified password the same way).
    private func proveMailbox(_ connection: PostgresConnection, user: User, origin: RequestOrigin) throws -> User {
        guard let address = user.email.map(EmailAddress.normalized) else { return user }
        try ThrottleRepository.clearSignIn(connection, emailID: address)
        guard !user.emailVerified else { return user }
        if try UserRepository.passwordHash(connection, id: user.id, forUpdate: true) != UserRepository.noPassword {
            try UserRepository.setPasswordHash(connection, id: user.id, hash: UserRepository.noPassword)
        }
        let removed =
            try PasskeyRepository.deleteAddedWhileUnverified(connection, userID: user.id)
            + IdentityRepository.deleteAddedWhileUnverified(connection, userID: user.id)
        _ = try SessionRepository.deleteAll(connection, userID: user.id)
        guard let verified = try UserRepository.markVerified(connection, id: user.id, emailNormalized: address) else { return user }
        try ActivityRepository.record(connection, userID: user.id, .emailVerified, origin: origin)
        if removed > 0 {
            SecurityEvent.log(
                context.logger, .emailVerified, outcome: .success, userID: user.id, origin: origin,
                detail: "\(removed) ways in added while the address was unverified removed")
        }
        return verified
    }

    // MARK: - Reauthentication

    /// `POST /users/me/reauthenticate/code`: a code to the account's address (`409 no_address`
    /// without one), replacing an older one. Counted per user by the route.
    public func requestReauthenticationCode(user: User) throws {
        guard let email = user.email.flatMap(EmailAddress.init) else {
            throw AccountsError(.noAddress, "The account has no address to mail a code to.")
        }
        try context.pool.withTransaction { connection in
            let slot = try EmailCodeRepository.insertReauthenticationSlot(
                connection, userID: user.id, email: email, lifetimeSeconds: context.configuration.emailCodeSeconds, at: context.clock.now())
            try OutboxRepository.enqueue(
                connection,
                .notice(
                    .signInCode, to: email.value, verified: user.emailVerified, firstname: user.firstname,
                    [OutgoingMail.codeSlotVariable: String(slot)])
            )
        }
        context.mailQueued()
    }

    /// `POST /users/me/reauthenticate {code}`: records that the session's holder proved the
    /// mailbox now; `422 invalid_code` naming `code` otherwise.
    public func reauthenticate(code: String, session: Session, origin: RequestOrigin) throws -> Date {
        let invalid = AccountsError.field("code", .invalidCode, "is wrong, used, expired or replaced by a newer one")
        guard Self.isWellFormed(code) else { throw invalid }
        let now = context.clock.now()
        let proved = try context.pool.withTransaction { connection -> Bool in
            guard let live = try EmailCodeRepository.liveReauthentication(connection, userID: session.userID, at: now) else { return false }
            guard try Self.check(connection, live, code) else { return false }
            try EmailCodeRepository.delete(connection, id: live.id)
            guard try SessionRepository.markAuthenticated(connection, id: session.id, userID: session.userID, at: now) else {
                throw AccountsError(.invalidToken, "The session ended.")
            }
            return true
        }
        guard proved else {
            SecurityEvent.log(context.logger, .passwordCheckFailed, outcome: .failure, userID: session.userID, origin: origin, detail: "email code")
            throw invalid
        }
        SecurityEvent.log(context.logger, .reauthenticated, outcome: .success, userID: session.userID, origin: origin, detail: "email code")
        return now
    }
}
