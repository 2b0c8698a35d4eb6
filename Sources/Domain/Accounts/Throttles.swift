import Cryptography
import FoundationEssentials
import Postgres
import StructuredLogging
import Synchronization

/// A kind of attempt the accounts' rules limit. With a subject it names one counter
/// (`ThrottleKey`), whose rule the configuration gives (`AccountService.Configuration.rule(for:)`).
public enum ThrottleAction: String, Sendable, CaseIterable {
    /// A sign-in with a password: guesses.
    case signIn = "signin"
    /// An administrator's sign-in with a password.
    case adminSignIn = "admin-signin"
    /// A new account by email and password.
    case registration = "register"
    /// A mailed reset link asked for.
    case passwordResetRequest = "reset"
    /// A reset link's token used to set a password.
    case passwordResetConfirmation = "reset-confirm"
    /// A signed-in user's current password checked (a password change, an account deletion).
    case passwordCheck = "password"
    /// A change of address asked for (each mails the new address).
    case emailChange = "email-change"
    /// A verification mail asked for again.
    case verificationMail = "verify"
    /// Everything a user holds, exported.
    case export
    /// An Apple or Google ID token checked for a sign-in.
    case identityToken = "idtoken"
    /// A nonce for an ID token handed out.
    case identityNonce = "idtoken-nonce"
    /// A passkey sign-in's challenge handed out.
    case passkeyChallenge = "passkey-challenge"
    /// A passkey's assertion checked.
    case passkeySignIn = "passkey"
    /// A way in added or removed (a passkey, an identity).
    case signInMethodChange = "sign-in-method"
    /// A password changed by its user (each mails the account's address a notice).
    case passwordChange = "password-change"
    /// A code sent to finish a sign-in with the second factor.
    case secondFactorCode = "mfa"
    /// A code by mail asked for (each mails the address).
    case emailCodeRequest = "email-code"
    /// A mailed code checked for a sign-in: guesses.
    case emailCodeSignIn = "email-code-signin"
    /// A guest account made.
    case guestCreation = "guest"
}

/// What one counter of an action is kept per, taken from a decoded request and who sent it.
public enum ThrottleSubject: Sendable, Hashable {
    /// The client address, as throttles count it (`RequestOrigin.throttleAddress`: IPv6 by its /64).
    case address(String)
    /// An email the request names, from every address together (`ThrottleSubject.emailID`).
    case email(String)
    /// An email the request names, from one client address: the owner rule (an address exhausts
    /// its own tries, never the owner's).
    case emailAndAddress(email: String, address: String)
    /// The signed-in user.
    case user(UUID)

    /// How an email text is counted: a valid address by its normalized form; any other text
    /// (which can hold anything: U+0000, which PostgreSQL text refuses; kilobytes, past the key
    /// index's row limit) under its digest.
    public static func emailID(_ text: String) -> String {
        EmailAddress(text)?.normalized ?? "sha256:" + SHA256.hexDigest(text.lowercased().utf8)
    }

    /// The kind, as the key shows it.
    public var kind: String {
        switch self {
        case .address: "address"
        case .email: "email"
        case .emailAndAddress: "pair"
        case .user: "user"
        }
    }

    var value: String {
        switch self {
        case .address(let address): address
        case .email(let email): email
        case .emailAndAddress(let email, let address): email + " " + address
        case .user(let id): id.lowercasedText
        }
    }
}

/// One counter: an action's attempts per a subject. Stored under `text`
/// (`<action>:<kind>:<value>`, as `signin:pair:ann@example.com 192.0.2.1`).
public struct ThrottleKey: Sendable, Hashable {
    public let action: ThrottleAction
    public let subject: ThrottleSubject

    public init(_ action: ThrottleAction, _ subject: ThrottleSubject) {
        self.action = action
        self.subject = subject
    }

    public var text: String { action.rawValue + ":" + subject.kind + ":" + subject.value }
}

extension AccountService.Configuration {
    /// The rule of a counter, or nil when its action has none of that kind.
    public func rule(for key: ThrottleKey) -> ThrottleRule? {
        switch (key.action, key.subject) {
        case (.signIn, .emailAndAddress), (.adminSignIn, .emailAndAddress): signInPerEmailAndAddress
        case (.signIn, .email), (.adminSignIn, .email), (.registration, .email), (.passwordResetConfirmation, .email), (.emailCodeSignIn, .email):
            signInPerEmail
        case (.emailCodeSignIn, .emailAndAddress): signInPerEmailAndAddress
        case (.signIn, .address), (.adminSignIn, .address), (.passwordResetConfirmation, .address), (.identityToken, .address),
            (.identityNonce, .address), (.passkeyChallenge, .address), (.passkeySignIn, .address), (.secondFactorCode, .address),
            (.emailCodeSignIn, .address):
            signInPerAddress
        case (.registration, .address): registrationsPerAddress
        case (.passwordResetRequest, .email): resetRequestsPerEmail
        case (.passwordResetRequest, .address): resetRequestsPerAddress
        case (.passwordCheck, .user): passwordChecks
        case (.emailChange, .user): emailChangesPerUser
        case (.emailChange, .email): emailChangesPerAddress
        case (.verificationMail, .user): verificationResends
        case (.export, .user): exportsPerUser
        case (.signInMethodChange, .user): signInMethodChangesPerUser
        case (.passwordChange, .user): passwordChangesPerUser
        case (.secondFactorCode, .user): secondFactorCodesPerUser
        case (.emailCodeRequest, .email): emailCodesPerEmail
        case (.emailCodeRequest, .address): emailCodesPerAddress
        case (.emailCodeRequest, .user): verificationResends
        case (.guestCreation, .address): guestsPerAddress
        default: nil
        }
    }
}

/// The attempt counters (`ThrottleRepository`, in PostgreSQL, so every instance sees the same),
/// at the clock's now. The API's route table is their only caller for counting: it takes a
/// route's keys from the decoded request, counts the attempt before the handler runs, and settles
/// it after (`acquire`, `giveBack`). The services only clear counters a change makes moot (a
/// reset clears the user's lock-outs).
public final class Throttles: Sendable {
    private let context: AccountsContext
    /// Keys (joined) the database found full, by this instance: when to ask it again (a second
    /// later at most) and when they unlock. See `acquire(_:rememberingRefusal:on:)`.
    private let refused = Mutex<[String: (askAgain: Date, unlocks: Date)]>([:])
    /// How long a refusal is answered without the database.
    static let refusalMemorySeconds = 1.0

    init(context: AccountsContext) {
        self.context = context
    }

    /// Counts one attempt on every key, or none when any key is full: nil when counted, else the
    /// seconds to wait. One statement, for all the keys at once (`exo_throttle_acquire`).
    ///
    /// `rememberingRefusal`, for counters that only their window empties (an action whose every
    /// attempt stays counted: guests, registrations, mail asked for), answers the same keys again
    /// from this instance's memory for a second after the database refused them: a flood from one
    /// address then costs the database one statement a second, not one per request. (An attempt
    /// given back meanwhile, a malformed one, frees its place a second late at most.)
    public func acquire(_ keys: [ThrottleKey], rememberingRefusal: Bool = false, on executor: some QueryExecutor) async throws -> Int? {
        let counted = keys.compactMap { key in rule(key).map { (key.text, $0) } }.filter { $0.1.limit > 0 }
        guard !counted.isEmpty else { return nil }
        let now = context.clock.now()
        let combination = rememberingRefusal ? counted.map(\.0).joined(separator: "\n") : ""
        if rememberingRefusal, let known = refused.withLock({ $0[combination] }), known.askAgain > now {
            return max(1, Int(known.unlocks.timeIntervalSince(now).rounded(.up)))
        }
        let query = ThrottleRepository.acquire(counted, at: now)
        let wait = try await executor.write(query, lockOrder: counted.map(\.0).min()!)[0]
        guard wait > 0 else { return nil }
        if rememberingRefusal {
            let unlocks = now.addingTimeInterval(Double(wait))
            let askAgain = min(unlocks, now.addingTimeInterval(Self.refusalMemorySeconds))
            refused.withLock { memory in
                if memory.count >= 4_096 { memory = memory.filter { $0.value.askAgain > now } }
                if memory.count >= 4_096 { memory.removeAll() }
                memory[combination] = (askAgain, unlocks)
            }
        }
        return Int(wait)
    }

    /// The seconds until the longest of the full keys unlocks, or nil when none is full: a read,
    /// for a request that may be answered as its counted kind would be but counts nothing.
    public func lockedFor(_ keys: [ThrottleKey], on executor: some QueryExecutor) async throws -> Int? {
        var wait: Int64 = 0
        for key in keys {
            guard let rule = rule(key), rule.limit > 0 else { continue }
            if let seconds = try await executor.read(ThrottleRepository.lockedFor(key.text, rule: rule, at: context.clock.now())).first {
                wait = max(wait, seconds)
            }
        }
        return wait > 0 ? Int(wait) : nil
    }

    /// Gives back one counted attempt on each key (and clears `clearing`): the attempt succeeded,
    /// or was never judged. Bookkeeping only: a failure is logged, not the request's failure.
    public func giveBack(_ keys: [ThrottleKey], clearing: ThrottleKey? = nil, on executor: some QueryExecutor) async {
        let released = keys.filter { $0 != clearing && rule($0).map { $0.limit > 0 } == true }.map(\.text)
        do {
            for key in released { _ = try await executor.write(ThrottleRepository.release(key), lockOrder: key) }
            if let clearing { _ = try await executor.write(ThrottleRepository.clear(clearing.text), lockOrder: clearing.text) }
        } catch {
            context.logger.warning(
                "could not give back throttle attempts", ["keys": String(keys.count), "error": String(describing: error)])
        }
    }

    /// The answer to an attempt a full counter refused: `429 too_many_attempts` with its wait.
    /// Counted in the metrics and the security log; a locked-out user (the email or user a
    /// sign-in or password check named) gets `locked_out` in their activity, once per window.
    public func refusal(_ keys: [ThrottleKey], wait: Int, origin: RequestOrigin) -> AccountsError {
        guard let action = keys.first?.action else { preconditionFailure("a refusal names the keys it counted") }
        let statistics = context.statistics
        switch action {
        case .signIn, .identityToken, .passkeySignIn, .emailCodeSignIn: statistics.signInThrottled.add(1, ordering: .relaxed)
        case .passwordCheck: statistics.passwordChecksThrottled.add(1, ordering: .relaxed)
        case .registration: statistics.registrationThrottled.add(1, ordering: .relaxed)
        case .passwordResetRequest, .passwordResetConfirmation: statistics.resetThrottled.add(1, ordering: .relaxed)
        default: break
        }
        var userID: UUID?
        var email: String?
        for key in keys {
            switch key.subject {
            case .user(let id): userID = id
            case .email(let id): email = id
            default: break
            }
        }
        switch action {
        case .signIn, .adminSignIn, .identityToken, .passkeySignIn, .passwordCheck, .emailCodeSignIn:
            SecurityEvent.log(context.logger, .lockedOut, outcome: .refused, userID: userID, origin: origin, detail: action.rawValue + " throttled")
        case .registration:
            SecurityEvent.log(context.logger, .registrationThrottled, outcome: .refused, userID: nil, origin: origin)
        default: break
        }
        if action == .signIn, let email {
            context.recordLockOutLater(email: email, origin: origin, oncePer: context.configuration.signInPerEmailAndAddress.windowSeconds)
        } else if action == .passwordCheck, let userID {
            context.recordActivityLater(.lockedOut, userID: userID, origin: origin, oncePer: context.configuration.passwordChecks.windowSeconds)
        }
        return AccountsError(.tooManyAttempts, Self.message(action), retryAfterSeconds: wait)
    }

    private static func message(_ action: ThrottleAction) -> String {
        switch action {
        case .signIn, .adminSignIn, .identityToken, .passkeySignIn: "Too many failed sign-ins; try again later."
        case .passkeyChallenge: "Too many passkey sign-ins; try again later."
        case .identityNonce: "Too many sign-ins; try again later."
        case .registration: "Too many registrations from this address or of this email; try again later."
        case .passwordResetRequest: "Too many password reset requests; try again later."
        case .passwordResetConfirmation: "Too many attempts; try again later."
        case .passwordCheck: "Too many wrong passwords; try again later."
        case .emailChange: "Too many changes of address; try again later."
        case .verificationMail: "Too many verification mails; try again later."
        case .export: "The account's data was exported less than an hour ago; try again later."
        case .signInMethodChange: "Too many changes of the ways into the account; try again later."
        case .passwordChange: "The password was changed too often in the last hour; try again later."
        case .secondFactorCode: "Too many wrong codes; try again later, or sign in with a passkey."
        case .emailCodeRequest: "Too many codes asked for; try again later."
        case .emailCodeSignIn: "Too many wrong codes; try again later."
        case .guestCreation: "Too many guest accounts from this address; try again later."
        }
    }

    private func rule(_ key: ThrottleKey) -> ThrottleRule? { context.configuration.rule(for: key) }
}
