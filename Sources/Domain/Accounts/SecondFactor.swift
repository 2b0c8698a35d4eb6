import Cryptography
import FoundationEssentials
import OneTimePasswords
import Outbox
import Postgres

/// What a sign-in that proved a factor leads to: a session, or (the second factor on) the token
/// of the challenge that finishes it.
enum SignInStep {
    case session(IssuedSession)
    case secondFactor(String)

    /// The session, or `401 mfa_required` with the challenge.
    func session() throws -> IssuedSession {
        switch self {
        case .session(let issued): return issued
        case .secondFactor(let token): throw AccountsError.mfaRequired(token: token)
        }
    }
}

/// A user's second factor: a TOTP authenticator (RFC 6238) and ten recovery codes.
///
/// - Enrolment: a secret (with its `otpauth://` URI and QR code), on once a first code is right;
///   the answer then holds the recovery codes, shown once (kept as SHA-256, single use).
/// - Sign-in: with the factor on, every sign-in that proves one factor (a password, Apple or
///   Google, a reset's link) gets a challenge instead of a session (`401 mfa_required`, a
///   single-use `mfaToken`, 5 minutes); a code finishes it (`finishSignIn`). Five wrong codes
///   end the challenge. A code is accepted once: its 30-second step is recorded, and no code of
///   that step or an older one passes again (two sign-ins racing with one code: one wins).
/// - Step-up: with the factor on, a recent authentication counts only if it proved both factors
///   (`requireBothFactors`); a reauthentication needs a code too (`verifyForStepUp`).
public final class SecondFactor: Sendable {
    private let context: AccountsContext
    private let sessions: Sessions
    private let mail: AccountMail
    private let recovery: Recovery

    /// How long a challenge lives (the contract: 5 minutes), and the wrong codes that end it.
    static let challengeSeconds: Double = 300
    static let failuresPerChallenge = 5
    static let recoveryCodeCount = 10

    init(context: AccountsContext, sessions: Sessions, mail: AccountMail, recovery: Recovery) {
        self.context = context
        self.sessions = sessions
        self.mail = mail
        self.recovery = recovery
    }

    /// What `GET /users/me/mfa` shows.
    public struct Status: Sendable, Equatable {
        public let enabled: Bool
        public let recoveryCodesLeft: Int
    }

    /// A started enrolment: the secret in base32, its URI, and the URI's QR code as SVG.
    public struct Enrolment: Sendable {
        public let secret: String
        public let uri: String
        public let qrCodeSVG: String
    }

    public func status(of userID: UUID) throws -> Status {
        try context.pool.withConnection { connection in
            guard let factor = try MFARepository.factor(connection, of: .user(userID)), factor.enabledAt != nil else {
                return Status(enabled: false, recoveryCodesLeft: 0)
            }
            return Status(enabled: true, recoveryCodesLeft: try MFARepository.recoveryCodesLeft(connection, factorID: factor.id))
        }
    }

    /// `POST /users/me/mfa/totp`: a new secret, not on until a code confirms it (a new start
    /// replaces an unconfirmed one); `409 already_enabled` while the factor is on.
    public func startEnrolment(user: User) throws -> Enrolment {
        // A guest has no address: the authenticator app shows the account's id.
        try startEnrolment(.user(user.id), account: user.email ?? user.id.lowercasedText)
    }

    /// `POST /admin/me/mfa/totp`: as a user's, for the administrator's own sign-in (audited).
    public func startEnrolment(admin: Admin, origin: RequestOrigin) throws -> Enrolment {
        let enrolment = try startEnrolment(.admin(admin.id), account: admin.email)
        try context.pool.withConnection { connection in
            try AdminRepository.audit(connection, admin: admin, action: .adminMFAEnrolmentStarted, target: nil, address: origin.address)
        }
        return enrolment
    }

    private func startEnrolment(_ owner: MFARepository.Owner, account: String) throws -> Enrolment {
        let totp = try TOTP.generate()
        let started = try context.pool.withConnection { connection in
            try MFARepository.startEnrolment(connection, of: owner, secret: totp.secret, at: context.clock.now())
        }
        guard started != nil else { throw AccountsError(.alreadyEnabled, "The second factor is on already: turn it off first.") }
        let uri = totp.uri(issuer: context.configuration.issuerName, account: account)
        return Enrolment(secret: Base32.encode(totp.secret), uri: uri, qrCodeSVG: try QRCode(bytes: Array(uri.utf8)).svg())
    }

    /// In an enrolment's transaction: turns the owner's factor on with a right code and stores
    /// `codes`' hashes; false for a wrong code.
    private static func confirm(
        _ connection: PostgresConnection, _ owner: MFARepository.Owner, code: String, codes: [String], at now: Date
    ) throws -> Bool {
        guard let factor = try MFARepository.factor(connection, of: owner, forUpdate: true) else {
            throw AccountsError.field("code", .invalidCode, "start the enrolment first")
        }
        guard factor.enabledAt == nil else { throw AccountsError(.alreadyEnabled, "The second factor is on already.") }
        guard let step = TOTP(secret: factor.secret).matchingStep(code, at: now.timeIntervalSince1970),
            try MFARepository.useStep(connection, factorID: factor.id, step: step)
        else { return false }
        _ = try MFARepository.enable(connection, factorID: factor.id, at: now)
        try MFARepository.replaceRecoveryCodes(connection, factorID: factor.id, hashes: codes.map(hash))
        return true
    }

    /// `POST /admin/me/mfa/totp/confirm`: a right code turns the administrator's factor on
    /// (audited); returns the ten recovery codes.
    public func confirmEnrolment(admin: Admin, code: String, origin: RequestOrigin) throws -> [String] {
        let codes = try Self.newRecoveryCodes()
        let confirmed = try context.pool.withTransaction { connection -> Bool in
            guard try Self.confirm(connection, .admin(admin.id), code: code, codes: codes, at: context.clock.now()) else { return false }
            try AdminRepository.audit(connection, admin: admin, action: .adminMFAEnabled, target: nil, address: origin.address)
            return true
        }
        guard confirmed else { throw AccountsError.field("code", .invalidCode, "is not the authenticator's current code") }
        return codes
    }

    /// `POST /users/me/mfa/totp/confirm`: a right code turns the factor on. Returns the ten
    /// recovery codes (shown once). The session that confirmed proved both factors now.
    public func confirmEnrolment(user: User, session: Session, code: String, origin: RequestOrigin) throws -> [String] {
        let now = context.clock.now()
        let codes = try Self.newRecoveryCodes()
        let confirmed = try context.pool.withTransaction { connection -> Bool in
            guard try Self.confirm(connection, .user(user.id), code: code, codes: codes, at: now) else { return false }
            _ = try SessionRepository.markAuthenticated(connection, id: session.id, userID: user.id, at: now)
            try ActivityRepository.record(connection, userID: user.id, .mfaEnabled, origin: origin)
            try OutboxRepository.enqueue(
                connection,
                .notice(.secondFactorChanged, to: user, ["change": "Two-step verification was turned on: signing in now also asks for a code"]))
            return true
        }
        guard confirmed else {
            SecurityEvent.log(context.logger, .mfaFailed, outcome: .failure, userID: user.id, origin: origin, detail: "enrolment")
            throw AccountsError.field("code", .invalidCode, "is not the authenticator's current code")
        }
        context.mailQueued()
        SecurityEvent.log(context.logger, .mfaEnabled, outcome: .success, userID: user.id, origin: origin)
        return codes
    }

    /// `DELETE /users/me/mfa/totp`, or an administrator's reset (`by`): the factor and its codes
    /// go; the user is told. `404` when none is on.
    public func disable(userID: UUID, origin: RequestOrigin, by admin: Admin? = nil) throws {
        try context.pool.withTransaction { connection in
            guard let user = try UserRepository.find(connection, id: userID, forUpdate: true),
                try MFARepository.delete(connection, of: .user(userID))
            else { throw AccountsError(.notFound, "The second factor is not on.") }
            if let admin {
                try AdminRepository.audit(connection, admin: admin, action: .userMFAReset, target: userID, address: origin.address)
            }
            try ActivityRepository.record(connection, userID: userID, .mfaDisabled, origin: origin)
            let change =
                admin == nil
                ? "Two-step verification was turned off: signing in no longer asks for a code"
                : "An administrator turned two-step verification off: signing in no longer asks for a code until you turn it on again"
            try OutboxRepository.enqueue(connection, .notice(.secondFactorChanged, to: user, ["change": change]))
        }
        context.mailQueued()
        SecurityEvent.log(
            context.logger, .mfaDisabled, outcome: .success, userID: userID, origin: origin, detail: admin == nil ? nil : "by an administrator")
    }

    /// `POST /users/me/mfa/recovery-codes`: ten new codes; the older ones are void.
    public func regenerateRecoveryCodes(user: User, origin: RequestOrigin) throws -> [String] {
        let codes = try Self.newRecoveryCodes()
        try context.pool.withTransaction { connection in
            guard let factor = try MFARepository.factor(connection, of: .user(user.id), forUpdate: true), factor.enabledAt != nil else {
                throw AccountsError(.notFound, "The second factor is not on.")
            }
            try MFARepository.replaceRecoveryCodes(connection, factorID: factor.id, hashes: codes.map(Self.hash))
            try OutboxRepository.enqueue(
                connection, .notice(.secondFactorChanged, to: user, ["change": "New recovery codes were made; the older ones no longer work"]))
        }
        context.mailQueued()
        return codes
    }

    // MARK: - Sign-in

    /// In a sign-in's transaction, once the first factor is proved: with the user's second factor
    /// on, a challenge (its token, which the caller answers with `401 mfa_required`); nil when it
    /// is off and the sign-in opens its session. A reset's new password hash waits in it.
    static func challenge(
        _ connection: PostgresConnection, userID: UUID, method: String, pendingPasswordHash: String? = nil, context: AccountsContext
    ) throws -> String? {
        try challenge(connection, owner: .user(userID), method: method, pendingPasswordHash: pendingPasswordHash, context: context)
    }

    /// `challenge(_:userID:…)` for a user's or an administrator's sign-in.
    static func challenge(
        _ connection: PostgresConnection, owner: MFARepository.Owner, method: String, pendingPasswordHash: String? = nil, context: AccountsContext
    ) throws -> String? {
        guard let factor = try MFARepository.factor(connection, of: owner), factor.enabledAt != nil else { return nil }
        let token = try SessionToken.generate()
        let now = context.clock.now()
        try MFARepository.insertChallenge(
            connection, tokenHash: token.hash, factorID: factor.id, method: method, pendingPasswordHash: pendingPasswordHash,
            expiresAt: now.addingTimeInterval(challengeSeconds), at: now)
        return token.text
    }

    /// The user of a live challenge, for the route's per-user throttle; nil for a dead token.
    public func challengeUser(_ token: String) throws -> UUID? {
        guard SessionToken.isWellFormed(token) else { return nil }
        return try context.pool.withConnection { connection in
            try MFARepository.challengeUser(connection, tokenHash: SessionToken.hash(of: token), at: context.clock.now())
        }
    }

    /// `POST /users/signin/mfa`: a TOTP code or a recovery code finishes the sign-in of the
    /// challenge `token` names (the reset it carries applies now) and opens the session. A wrong
    /// code is `401 invalid_code`, and the fifth ends the challenge (`401 invalid_mfa_token`).
    public func finishSignIn(token: String, code: String, origin: RequestOrigin) throws -> IssuedSession {
        let invalidToken = AccountsError(.invalidMFAToken, "The mfaToken is unknown, used or expired: sign in again.")
        guard SessionToken.isWellFormed(token) else { throw invalidToken }
        let tokenHash = SessionToken.hash(of: token)
        let sessionToken = try SessionToken.generate()
        enum Outcome {
            case issued(IssuedSession, usedRecoveryCode: Bool, reset: Bool)
            case wrong(userID: UUID, ended: Bool)
        }
        let outcome = try context.pool.withTransaction { connection -> Outcome in
            let now = context.clock.now()
            guard let challenge = try MFARepository.challenge(connection, tokenHash: tokenHash, at: now),
                let factor = try MFARepository.factor(connection, id: challenge.factorID), case .user(let userID) = factor.owner
            else { throw invalidToken }
            guard let proof = try Self.verify(connection, factor: factor, code: code, at: now) else {
                let failures = try MFARepository.countFailure(connection, tokenHash: tokenHash)
                let ended = failures >= Self.failuresPerChallenge
                if ended { try MFARepository.deleteChallenge(connection, tokenHash: tokenHash) }
                try ActivityRepository.record(connection, userID: userID, .mfaFailed, origin: origin)
                return .wrong(userID: userID, ended: ended)
            }
            try MFARepository.deleteChallenge(connection, tokenHash: tokenHash)
            if try AdminRepository.isDisabled(connection, id: userID) {
                throw AccountsError(.accountDisabled, "An administrator disabled this account.")
            }
            let user: User
            if let pending = challenge.pendingPasswordHash {
                user = try recovery.applyReset(connection, userID: userID, passwordHash: pending, origin: origin)
            } else {
                guard let found = try UserRepository.find(connection, id: userID) else { throw invalidToken }
                user = found
            }
            let session = try sessions.openSession(connection, userID: userID, tokenHash: sessionToken.hash, userAgent: origin.userAgent)
            if proof == .recoveryCode { try ActivityRepository.record(connection, userID: userID, .recoveryCodeUsed, origin: origin) }
            if let method = ActivityEvent.Method(rawValue: challenge.method) {
                try ActivityRepository.record(connection, userID: userID, .signedIn, origin: origin, method: method)
            }
            return .issued(
                IssuedSession(accessToken: sessionToken.text, session: session, user: user), usedRecoveryCode: proof == .recoveryCode,
                reset: challenge.pendingPasswordHash != nil)
        }
        switch outcome {
        case .wrong(let userID, let ended):
            context.statistics.signInFailures.add(1, ordering: .relaxed)
            SecurityEvent.log(context.logger, .mfaFailed, outcome: .failure, userID: userID, origin: origin, detail: ended ? "challenge ended" : nil)
            if ended { throw AccountsError(.invalidMFAToken, "Five wrong codes ended this sign-in: sign in again.") }
            throw AccountsError(.invalidCode, "The code is wrong, used, or outside its 30-second window.")
        case .issued(let issued, let usedRecoveryCode, let reset):
            if usedRecoveryCode {
                SecurityEvent.log(context.logger, .recoveryCodeUsed, outcome: .success, userID: issued.user.id, origin: origin)
            }
            if reset {
                context.mailQueued()
                SecurityEvent.log(context.logger, .passwordReset, outcome: .success, userID: issued.user.id, origin: origin)
            }
            SecurityEvent.log(context.logger, .signedIn, outcome: .success, userID: issued.user.id, origin: origin, detail: "second factor")
            return issued
        }
    }

    /// With `--admin-mfa required`, an administrator whose second factor is not on may only turn
    /// it on: `403 mfa_enrolment_required` on every other route.
    public func requireAdminFactor(_ admin: Admin, on executor: some QueryExecutor) async throws {
        guard context.configuration.adminSecondFactorRequired else { return }
        let enabledAt = try await executor.transaction { connection in try MFARepository.enabledAt(connection, of: .admin(admin.id)) }
        if enabledAt == nil {
            throw AccountsError(
                .mfaEnrolmentRequired, "This deployment requires two-step verification: turn it on first (POST /admin/me/mfa/totp).")
        }
    }

    /// Whether the administrator's second factor is on.
    public func adminFactorIsOn(_ admin: Admin) throws -> Bool {
        try context.pool.withConnection { try MFARepository.enabledAt($0, of: .admin(admin.id)) != nil }
    }

    // MARK: - Step-up

    /// With the user's factor on, a recent authentication counts only if it came after the
    /// factor was turned on: every proof since then took both factors (a sign-in finished with a
    /// code, a reauthentication with one, the enrolment's own confirmation).
    public func requireBothFactors(_ session: Session, on executor: some QueryExecutor) async throws {
        let enabledAt = try await executor.transaction { connection in try MFARepository.enabledAt(connection, of: .user(session.userID)) }
        if let enabledAt, session.authenticatedAt < enabledAt {
            throw AccountsError(
                .reauthenticationRequired, "Confirm it is you with both factors: POST /users/me/reauthenticate with a code, then try again.")
        }
    }

    /// For a reauthentication: with the factor on, `code` (a TOTP or recovery code) must be
    /// right, and is used up; `422 invalid_code` naming `field` otherwise. Nothing with it off.
    public func verifyForStepUp(userID: UUID, code: String?, field: String, origin: RequestOrigin) throws {
        enum Outcome { case off, missing, wrong, proved }
        let outcome = try context.pool.withTransaction { connection -> Outcome in
            guard let factor = try MFARepository.factor(connection, of: .user(userID), forUpdate: true), factor.enabledAt != nil else {
                return .off
            }
            guard let code else { return .missing }
            switch try Self.verify(connection, factor: factor, code: code, at: context.clock.now()) {
            case nil:
                try ActivityRepository.record(connection, userID: userID, .mfaFailed, origin: origin)
                return .wrong
            case .recoveryCode?:
                try ActivityRepository.record(connection, userID: userID, .recoveryCodeUsed, origin: origin)
                return .proved
            case .totp?:
                return .proved
            }
        }
        switch outcome {
        case .off, .proved: return
        case .missing: throw AccountsError.field(field, .invalidCode, "is required: the second factor is on")
        case .wrong:
            SecurityEvent.log(context.logger, .mfaFailed, outcome: .failure, userID: userID, origin: origin, detail: "reauthentication")
            throw AccountsError.field(field, .invalidCode, "is wrong, used, or outside its 30-second window")
        }
    }

    // MARK: - Codes

    /// How a code proved the factor.
    enum Proof: Equatable {
        case totp
        case recoveryCode
    }

    /// Six digits are a TOTP code (accepted once: its step is recorded); anything else is looked
    /// up as a recovery code (used up). Nil when wrong.
    static func verify(_ connection: PostgresConnection, factor: MFARepository.Factor, code: String, at now: Date) throws -> Proof? {
        let trimmed = String(code.filter { $0 != " " && $0 != "-" })
        if trimmed.count == TOTP.digits, trimmed.allSatisfy(\.isASCII), trimmed.allSatisfy(\.isNumber) {
            guard let step = TOTP(secret: factor.secret).matchingStep(trimmed, at: now.timeIntervalSince1970),
                try MFARepository.useStep(connection, factorID: factor.id, step: step)
            else { return nil }
            return .totp
        }
        guard trimmed.utf8.count == 16, try MFARepository.useRecoveryCode(connection, factorID: factor.id, hash: hash(trimmed), at: now) else {
            return nil
        }
        return .recoveryCode
    }

    /// Ten codes of 80 random bits each, in base32 (lower case), as four groups of four.
    static func newRecoveryCodes() throws -> [String] {
        try (0..<recoveryCodeCount).map { _ in
            let text = Base32.encode(try SecureRandom.bytes(count: 10)).lowercased()
            return stride(from: 0, to: 16, by: 4).map { start in
                String(text[text.index(text.startIndex, offsetBy: start)..<text.index(text.startIndex, offsetBy: start + 4)])
            }.joined(separator: "-")
        }
    }

    /// The SHA-256 of a recovery code as typed: without dashes or spaces, in lower case.
    static func hash(_ code: String) -> [UInt8] {
        SHA256.hash(Array(code.filter { $0 != " " && $0 != "-" }.lowercased().utf8))
    }
}
