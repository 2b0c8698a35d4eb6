import Cryptography
import FoundationEssentials
import Postgres
import Threads

/// Sessions: the live session and user of a bearer token (`authenticate`, from the session cache
/// when it has them and is fresh), their use, which the background writer notes, their list and
/// their end; and what keeps the cache true after this instance's changes and everyone else's.
public final class Sessions: Sendable {
    private let context: AccountsContext
    private let sessionLookup: SessionRepository.Lookup
    /// Sessions and users read before the database (`SessionCache`), and what keeps it fresh;
    /// the feed is nil when the cache is off.
    private let sessionCache: SessionCache
    private let invalidationFeed: InvalidationFeed?
    private let toucher: SessionToucher

    init(context: AccountsContext, sessionCache: SessionCache, invalidationFeed: InvalidationFeed?, toucher: SessionToucher) {
        self.context = context
        self.sessionLookup = SessionRepository.Lookup(lifetime: context.configuration.lifetime)
        self.sessionCache = sessionCache
        self.invalidationFeed = invalidationFeed
        self.toucher = toucher
    }

    /// The live session (when `withSession`) and user of a bearer token, or `invalid_token`: from
    /// the session cache when it has it and is fresh, else one read, whichever executor runs it
    /// (kept in the cache). A session last seen over a minute ago is noted for the background writer.
    public func authenticate(
        token: String, withSession: Bool, on executor: some QueryExecutor
    ) async throws -> (session: Session?, user: User) {
        guard SessionToken.isWellFormed(token) else { throw AccountsError.invalidToken }
        let tokenHash = SessionToken.hash(of: token)
        let cached = sessionCache.isEnabled
        // Ends and touches are wall-clock times (the clock's); the cache's freshness is real time.
        let now = context.clock.now()
        if cached, let hit = sessionCache.lookup(tokenHash, now: now, monotonicNow: monotonicNanoseconds()) {
            if hit.touch { toucher.note(hit.session.id) }
            return (hit.session, hit.user)
        }
        // A read for the cache takes the whole session, and a ticket before it goes out.
        let ticket = cached ? sessionCache.ticket() : 0
        let query = sessionLookup.query(tokenHash: tokenHash, withSession: withSession || cached, at: now)
        guard let row = try await executor.read(query).first else { throw AccountsError.invalidToken }
        if row.isStale { toucher.note(row.sessionID) }
        if cached, let session = row.session {
            let refresh = context.configuration.lifetime.refreshAfterSeconds
            sessionCache.fill(
                ticket: ticket, tokenHash: tokenHash, session: session, user: row.user,
                touchDue: row.isStale ? now.addingTimeInterval(refresh) : session.lastSeenAt.addingTimeInterval(refresh))
        }
        return (row.session, row.user)
    }

    /// Throws `403 email_unverified` unless the user's address is verified: a change of the ways
    /// into the account needs it, so that whoever registered an address they do not own cannot
    /// plant a way in that outlives the owner's password reset.
    public func requireVerifiedAddress(_ user: User) throws(AccountsError) {
        // A guest has no address anyone could hijack: its ways in are its own.
        guard user.emailVerified || user.email == nil else {
            throw AccountsError(.emailUnverified, "Verify the account's email address first.")
        }
    }

    /// Throws `403 reauthentication_required` unless the session's holder proved a credential
    /// within `Configuration.recentAuthenticationSeconds` (a stolen token alone cannot change the
    /// ways in). A guest has nothing to prove but its session, which is its only way in: it
    /// adds its first ones without (as Firebase links an anonymous account).
    public func requireRecentAuthentication(_ session: Session, of user: User) throws(AccountsError) {
        if user.isGuest { return }
        let age = context.clock.now().timeIntervalSince(session.authenticatedAt)
        guard age <= context.configuration.recentAuthenticationSeconds else {
            throw AccountsError(.reauthenticationRequired, "Confirm it is you: POST /users/me/reauthenticate, then try again.")
        }
    }

    /// Writes the session use noted so far now, rather than within the background writer's
    /// interval: for a test that moves the clock past a use it has just made.
    public func recordSessionUse() {
        toucher.flush()
    }

    /// After this instance changed `userID` (a user's own write): their cached sessions and
    /// profile go at once, before the change is acknowledged.
    public func changed(userID: UUID) {
        sessionCache.invalidate(users: CollectionOfOne(userID))
    }

    /// After a change this instance cannot attribute to one user (an administrator's, a mailed
    /// link's, a sign-in's), or one made outside it: returns once the cache has applied every
    /// change committed before the call, or serves nothing (`InvalidationFeed.catchUp`).
    public func catchUpWithTheDatabase() {
        invalidationFeed?.catchUp()
    }

    /// Which sessions `signOut` ends.
    public enum SignOutScope: String, Sendable {
        case current, others, all
    }

    public func signOut(_ session: Session, scope: SignOutScope, origin: RequestOrigin? = nil) throws {
        let ended = try context.pool.withTransaction { connection in
            let ended =
                switch scope {
                case .current: try SessionRepository.delete(connection, id: session.id, userID: session.userID) ? 1 : 0
                case .others: try SessionRepository.deleteAll(connection, userID: session.userID, except: session.id)
                case .all: try SessionRepository.deleteAll(connection, userID: session.userID)
                }
            try ActivityRepository.record(connection, userID: session.userID, .signedOut, origin: origin)
            return ended
        }
        SecurityEvent.log(
            context.logger, .signedOut, outcome: .success, userID: session.userID, origin: origin,
            detail: "scope \(scope.rawValue), \(ended) sessions ended")
    }

    public func sessions(of userID: UUID) throws -> [Session] {
        try context.pool.withConnection {
            try SessionRepository.list($0, userID: userID, lifetime: context.configuration.lifetime, at: context.clock.now())
        }
    }

    /// Ends one of the user's sessions; another user's session is `not_found`, like an unknown one.
    public func revokeSession(id: UUID, userID: UUID, origin: RequestOrigin? = nil) throws {
        try context.pool.withTransaction { connection in
            guard try SessionRepository.delete(connection, id: id, userID: userID) else { throw AccountsError(.notFound, "No such session.") }
            try ActivityRepository.record(connection, userID: userID, .sessionRevoked, origin: origin)
        }
        SecurityEvent.log(
            context.logger, .sessionRevoked, outcome: .success, userID: userID, origin: origin,
            detail: "session \(id.lowercasedText)")
    }

    // MARK: - In the sign-ins' transactions

    /// Inserts a session and ends the user's oldest ones beyond `maxSessionsPerUser`.
    func openSession(_ connection: PostgresConnection, userID: UUID, tokenHash: [UInt8], userAgent: String?) throws -> Session {
        let session = try SessionRepository.insert(
            connection, userID: userID, tokenHash: tokenHash, userAgent: userAgent,
            lifetime: context.configuration.lifetime, at: context.clock.now())
        _ = try SessionRepository.evictOldest(connection, userID: userID, keeping: session.id, keep: context.configuration.maxSessionsPerUser)
        return session
    }
}
