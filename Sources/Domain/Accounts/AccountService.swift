import Cryptography
import Postgres
import StructuredLogging
import Synchronization
import Threads
import Time

/// The rules of accounts, sessions and profiles; the only place that decides what a request may do.
///
/// Made of parts with one job each (`sessions`, `passwordSignIn`, `passwords`, `profiles`,
/// `recovery`, `signInMethods`, `administrators`, `administration`, `userEvents`), which share one
/// core (`AccountsContext`: the pools, the configuration, the hashing, the counters), and the
/// throttle component the route table counts on (`throttles`). It starts their background threads
/// and stops them.
public final class AccountService: Sendable {
    /// Tunables, with the contract's defaults.
    public struct Configuration: Sendable {
        public var lifetime = SessionLifetime()
        /// What session lifetimes, throttle windows and token expiries are measured by: real time,
        /// unless a test moves it. Instances sharing a database share it.
        public var clock = WallClock.system
        /// Failed sign-ins per email from one client address (IPv6: one /64): the hard limit,
        /// which one address can reach without locking the owner out elsewhere.
        public var signInPerEmailAndAddress = ThrottleRule(limit: 10, windowSeconds: 15 * 60)
        /// Failed sign-ins per email from all addresses together: stops guessing spread over many
        /// addresses; much higher, so that no single address can reach it.
        public var signInPerEmail = ThrottleRule(limit: 100, windowSeconds: 15 * 60)
        /// Failed sign-ins per client address (IPv6: one /64), whatever the email.
        public var signInPerAddress = ThrottleRule(limit: 100, windowSeconds: 15 * 60)
        /// Wrong current passwords per user (password change, account deletion).
        public var passwordChecks = ThrottleRule(limit: 5, windowSeconds: 15 * 60)
        /// Registrations per client address (IPv6: one /64); limit 0 turns it off.
        public var registrationsPerAddress = ThrottleRule(limit: 100, windowSeconds: 60 * 60)
        /// Password reset requests per email (registered or not, so that a 429 tells nothing).
        public var resetRequestsPerEmail = ThrottleRule(limit: 5, windowSeconds: 60 * 60)
        /// Password reset requests per client address (IPv6: one /64), whatever the email.
        public var resetRequestsPerAddress = ThrottleRule(limit: 30, windowSeconds: 60 * 60)
        /// Verification mails a signed-in user may ask for again.
        public var verificationResends = ThrottleRule(limit: 5, windowSeconds: 60 * 60)
        /// Changes of address a user may ask for (each mails the new address).
        public var emailChangesPerUser = ThrottleRule(limit: 3, windowSeconds: 60 * 60)
        /// Changes of address to one target address, whoever asks (each mails it).
        public var emailChangesPerAddress = ThrottleRule(limit: 3, windowSeconds: 60 * 60)
        /// Exports of everything a user holds (`GET /users/me/export`).
        public var exportsPerUser = ThrottleRule(limit: 1, windowSeconds: 60 * 60)
        /// Ways in added or removed per user (passkeys, identities).
        public var signInMethodChangesPerUser = ThrottleRule(limit: 10, windowSeconds: 60 * 60)
        /// Password changes per user (each mails a notice, so that a token cannot flood the inbox).
        public var passwordChangesPerUser = ThrottleRule(limit: 10, windowSeconds: 60 * 60)
        /// Wrong second-factor codes per user, from every address (each challenge ends at 5).
        public var secondFactorCodesPerUser = ThrottleRule(limit: 20, windowSeconds: 15 * 60)
        /// How long after its holder proved a credential a session may change the ways in.
        public var recentAuthenticationSeconds: Double = 300
        /// Whether an ID token must carry a nonce this server issued (`POST /users/signin/nonce`);
        /// off, a nonce the app made is checked against the token's claim, and none is needed.
        public var idTokenNonceRequired = true
        /// How long an issued nonce may be used (the contract: 5 minutes).
        public var idTokenNonceSeconds: Double = 300
        /// How long the link that undoes an applied change of address works (the contract: 7 days).
        public var emailChangeUndoSeconds: Double = 7 * 86_400
        /// Whether every administrator must have a second factor: until theirs is on, their
        /// session may only turn one on (`403 mfa_enrolment_required` elsewhere).
        public var adminSecondFactorRequired = false
        /// The name authenticator apps show for the second factor's codes (the app's name).
        public var issuerName = "Exosphere"
        /// How long the link that removes a way in just added works (the contract: 7 days).
        public var signInMethodRemovalSeconds: Double = 7 * 86_400
        /// How long a mailed reset link works (the contract: 1 hour).
        public var resetTokenSeconds: Double = 3_600
        /// How long a mailed code works (the contract: 10 minutes).
        public var emailCodeSeconds: Double = 600
        /// Whether a right code for an address no account holds makes the account
        /// (`--email-code-signup`; off by default).
        public var emailCodeSignup = false
        /// Codes by mail asked for per email (registered or not, so that a 429 tells nothing).
        public var emailCodesPerEmail = ThrottleRule(limit: 5, windowSeconds: 60 * 60)
        /// Codes by mail asked for per client address (IPv6: one /64), whatever the email.
        public var emailCodesPerAddress = ThrottleRule(limit: 30, windowSeconds: 60 * 60)
        /// Guests made per client address (IPv6: one /64); limit 0 turns it off.
        public var guestsPerAddress = ThrottleRule(limit: 30, windowSeconds: 60 * 60)
        /// How long a guest may stay idle (no change, no session used) before it is deleted with
        /// everything it holds (`--guest-ttl-days`, default 30); 0 keeps guests.
        public var guestIdleSeconds: Double = 30 * 86_400
        /// How long a mailed verification link works (the contract: 24 hours).
        public var verificationTokenSeconds: Double = 86_400
        /// How often queued password reset requests are turned into tokens and mail.
        public var resetResolveIntervalSeconds: Double = 1
        /// How long security events are kept and listed (the contract: 90 days).
        public var activityRetentionSeconds: Double = 90 * 86_400
        /// The most sessions one user keeps; signing in beyond it ends the oldest.
        public var maxSessionsPerUser = 100
        /// How often expired sessions and old throttle rows are deleted (by one instance at a time).
        public var housekeepingIntervalSeconds: Double = 600
        /// How often the custom field types are read again (an administrator may change one elsewhere).
        public var fieldTypeRefreshSeconds: Double = 1
        public var passwordPolicy = PasswordPolicy()
        public var fieldLimits = CustomFieldLimits()
        /// The bytes the cache of sessions and their users may take (`SessionCache`); 0 turns it
        /// off, and every authenticated request reads the database.
        public var sessionCacheBytes = 32 << 20
        /// How old a change committed elsewhere may be while the cache still serves: the bound of
        /// the window in which another instance's revocation is not yet seen here.
        public var sessionCacheStaleness: Duration = .milliseconds(80)
        /// How often the cache's feed reads the changes (well under the staleness bound).
        public var sessionCachePollInterval: Duration = .milliseconds(20)

        /// The longest window of any throttle: rows older than that count for nothing.
        public var longestThrottleWindowSeconds: Double {
            [
                signInPerEmailAndAddress, signInPerEmail, signInPerAddress, passwordChecks, registrationsPerAddress,
                resetRequestsPerEmail, resetRequestsPerAddress, verificationResends, emailChangesPerUser, emailChangesPerAddress,
                exportsPerUser, signInMethodChangesPerUser, passwordChangesPerUser, secondFactorCodesPerUser, emailCodesPerEmail,
                emailCodesPerAddress, guestsPerAddress,
            ]
            .map(\.windowSeconds).max()!
        }

        public init() {}
    }

    public let configuration: Configuration
    public let schema: FieldSchema
    /// Counters for metrics: sign-ins refused as wrong, and attempts refused by a throttle.
    public let statistics: Statistics
    /// Sessions and users read before the database (`SessionCache`), and what keeps it fresh;
    /// the feed is nil when the cache is off.
    public let sessionCache: SessionCache
    private let invalidationFeed: InvalidationFeed?
    /// Deletes expired sessions and old throttle rows in the background.
    public let housekeeping: Housekeeping

    /// The session of a bearer token, the session cache, and the sessions' list and end.
    public let sessions: Sessions
    /// Registration and sign-in by email and password.
    public let passwordSignIn: PasswordSignIn
    /// The signed-in user's password change and account deletion.
    public let passwords: Passwords
    /// A user's profile and the field types.
    public let profiles: Profiles
    /// Password reset, email verification and changes of address by mailed links, and the user's activity.
    public let recovery: Recovery
    /// Sign in with Apple and Google, passkeys, and the list of a user's ways in.
    public let signInMethods: SignInMethods
    /// Administrators: their accounts, the first one's setup, their sign-in and sessions.
    public let administrators: Administrators
    /// What administrators do to users and the field schema, and the audit log.
    public let administration: Administration
    /// What the live event streams read and mark.
    public let userEvents: UserEvents
    /// The attempt counters the route table counts on before a route's handler runs.
    public let throttles: Throttles
    /// A user's second factor: TOTP, recovery codes, the sign-ins it finishes, the step-up.
    public let secondFactor: SecondFactor
    /// Sign-in and reauthentication by codes mailed to the account's address.
    public let emailCodes: EmailCodes
    /// Accounts without an address or a password yet, and their sweep.
    public let guests: Guests

    private let context: AccountsContext
    private let toucher: SessionToucher
    /// Resolves queued password reset requests in the background.
    private let resetResolver: PeriodicThread
    /// Reads the field types again, for types administrators changed through other instances.
    private let schemaRefresher: PeriodicThread

    /// `backgroundPool` is the requests' `pool` unless given.
    public init(
        pool: PostgresPool, backgroundPool: PostgresPool? = nil, hasher: PasswordHasher, hashing: HashingPool,
        configuration: Configuration = Configuration(), logger: Logger, mailQueued: @escaping @Sendable () -> Void = {}
    ) {
        let context = AccountsContext(
            pool: pool, backgroundPool: backgroundPool ?? pool, hasher: hasher, hashing: hashing, configuration: configuration, logger: logger,
            mailQueued: mailQueued)
        self.context = context
        self.configuration = configuration
        self.schema = context.schema
        self.statistics = context.statistics
        self.toucher = SessionToucher(pool: pool, lifetime: configuration.lifetime, clock: configuration.clock, logger: logger)
        self.housekeeping = Housekeeping(
            pool: pool, lifetime: configuration.lifetime,
            throttleRetentionSeconds: configuration.longestThrottleWindowSeconds,
            activityRetentionSeconds: configuration.activityRetentionSeconds,
            intervalSeconds: configuration.housekeepingIntervalSeconds, clock: configuration.clock, logger: logger)
        sessionCache = SessionCache(
            capacityBytes: configuration.sessionCacheBytes, staleness: configuration.sessionCacheStaleness,
            refreshAfterSeconds: configuration.lifetime.refreshAfterSeconds)
        if sessionCache.isEnabled {
            var feed = InvalidationFeed.Configuration()
            feed.pollInterval = configuration.sessionCachePollInterval
            invalidationFeed = InvalidationFeed(
                cache: sessionCache, connection: pool.configuration, configuration: feed, logger: logger.with("component", "session-cache"))
            invalidationFeed?.start()
        } else {
            invalidationFeed = nil
        }
        let mail = AccountMail(context: context)
        sessions = Sessions(context: context, sessionCache: sessionCache, invalidationFeed: invalidationFeed, toucher: toucher)
        passwordSignIn = PasswordSignIn(context: context, sessions: sessions, mail: mail)
        passwords = Passwords(context: context, sessions: sessions, mail: mail)
        profiles = Profiles(context: context, mail: mail)
        recovery = Recovery(context: context, mail: mail)
        signInMethods = SignInMethods(context: context, sessions: sessions, mail: mail)
        administrators = Administrators(context: context)
        administration = Administration(context: context, profiles: profiles, recovery: recovery)
        userEvents = UserEvents(context: context)
        throttles = Throttles(context: context)
        secondFactor = SecondFactor(context: context, sessions: sessions, mail: mail, recovery: recovery)
        emailCodes = EmailCodes(context: context, sessions: sessions, mail: mail)
        guests = Guests(context: context)
        resetResolver = PeriodicThread(
            name: "reset-requests", intervalNanoseconds: UInt64(max(0.01, configuration.resetResolveIntervalSeconds) * 1e9))
        schemaRefresher = PeriodicThread(
            name: "field-types", intervalNanoseconds: UInt64(max(0.01, configuration.fieldTypeRefreshSeconds) * 1e9))
        resetResolver.start { [self] in
            do {
                try recovery.resolvePasswordResets()
                try emailCodes.resolveSignInRequests()
            } catch {
                logger.warning("resolving password reset and code requests failed", ["error": String(reflecting: error)])
            }
        }
        schemaRefresher.start { [self] in
            do {
                try context.backgroundPool.withConnection { try schema.refresh($0) }
            } catch {
                logger.debug("reading the field types failed", ["error": String(reflecting: error)])
            }
        }
    }

    /// In a storm, refuses (`503 overloaded`) before any database work what the hashing pool would
    /// refuse anyway: the route table asks before it counts an attempt of a route that hashes.
    public func refuseWhenHashingIsFull(for origin: RequestOrigin) throws(AccountsError) {
        try context.refuseWhenHashingIsFull(for: origin)
    }

    /// Writes pending session use and stops the background writer; call before closing the pool.
    public func shutdown() {
        resetResolver.stop()
        schemaRefresher.stop()
        housekeeping.shutdown()
        toucher.shutdown()
        context.laterActivityQueue.shutdown()
        invalidationFeed?.shutdown()
    }
}

extension AccountService {
    /// Counts of this instance since it started (the throttles themselves live in PostgreSQL).
    public final class Statistics: Sendable {
        public let signInFailures = Atomic<Int>(0)
        public let signInThrottled = Atomic<Int>(0)
        public let passwordChecksThrottled = Atomic<Int>(0)
        public let registrationThrottled = Atomic<Int>(0)
        public let resetThrottled = Atomic<Int>(0)
        /// Guests made, and guests deleted by the sweep after `guestIdleSeconds` idle.
        public let guestsCreated = Atomic<Int>(0)
        public let guestsDeleted = Atomic<Int>(0)
    }
}
