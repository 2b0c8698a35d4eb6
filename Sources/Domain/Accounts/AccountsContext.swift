import Cryptography
import FoundationEssentials
import Postgres
import StructuredLogging
import Synchronization
import Threads
import Time

/// What every part of `AccountService` shares: the pools, the tunables and the clock, the field
/// schema, the counters, the hashing (bounded per client address) and the security
/// events written outside a request's transaction.
///
/// Expensive hashing runs on the bounded `HashingPool`, outside any transaction, so a database
/// connection is never held while a CPU hashes.
final class AccountsContext: Sendable {
    let configuration: AccountService.Configuration
    let schema: FieldSchema
    let statistics = AccountService.Statistics()
    let pool: PostgresPool
    /// Where background work (resolving reset requests) runs: never a request's connection.
    let backgroundPool: PostgresPool
    /// Writes the activity of failed sign-ins after their answer (`recordActivityLater`).
    let laterActivityQueue = BoundedThreadPool(name: "activity", threads: 1, queueLimit: 4096)
    let hasher: PasswordHasher
    private let hashing: HashingPool
    /// Hashing places held per client address (`hashingPlacesPerAddress`).
    private let hashingShares = Mutex<[String: Int]>([:])
    let logger: Logger
    /// `configuration.clock`.
    var clock: WallClock { configuration.clock }
    /// Called after a commit that queued mail, so that it goes out at once.
    let mailQueued: @Sendable () -> Void

    init(
        pool: PostgresPool, backgroundPool: PostgresPool, hasher: PasswordHasher, hashing: HashingPool, configuration: AccountService.Configuration,
        logger: Logger, mailQueued: @escaping @Sendable () -> Void
    ) {
        self.pool = pool
        self.backgroundPool = backgroundPool
        self.mailQueued = mailQueued
        self.hasher = hasher
        self.hashing = hashing
        self.configuration = configuration
        self.schema = FieldSchema(limits: configuration.fieldLimits)
        self.logger = logger
    }

    // MARK: - Hashing

    /// Runs hashing work on the bounded pool, in the lane the route declares (`HashingLane`); a
    /// full pool is `overloaded` (503), at once, and work whose client went away before it started
    /// is `cancelled` (nobody reads that answer). Work outside a route (the command line) names
    /// its lane.
    func onHashingPool<T: Sendable>(
        _ origin: RequestOrigin?, outsideARoute: HashingPool.Lane? = nil,
        _ work: @escaping @Sendable () throws -> T
    ) throws -> T {
        guard let lane = HashingLane.declared ?? outsideARoute else {
            preconditionFailure("hashing in a route that declares no hashing lane")
        }
        if let address = origin?.throttleAddress {
            let limit = hashingPlacesPerAddress
            let admitted = hashingShares.withLock { shares -> Bool in
                guard shares[address, default: 0] < limit else { return false }
                shares[address, default: 0] += 1
                return true
            }
            guard admitted else { throw AccountsContext.overloadedAddress }
        }
        defer {
            if let address = origin?.throttleAddress {
                hashingShares.withLock { shares in
                    shares[address, default: 1] -= 1
                    if shares[address] == 0 { shares.removeValue(forKey: address) }
                }
            }
        }
        do {
            return try hashing.run(lane: lane, cancellation: origin?.cancellation, owner: origin?.throttleAddress, work)
        } catch let error as SecurityError where error.code == .overloaded || error.code == .shutDown {
            throw AccountsError(.overloaded, "Too many password operations at once; try again shortly.", retryAfterSeconds: 1)
        } catch let error as SecurityError where error.code == .cancelled {
            throw AccountsError(.cancelled, "The client went away before its password was checked.")
        }
    }

    /// In a storm, refuses before any database work what the hashing pool would refuse anyway.
    func refuseWhenHashingIsFull(for origin: RequestOrigin) throws(AccountsError) {
        guard hashing.hasCapacity else {
            throw AccountsError(.overloaded, "Too many password operations at once; try again shortly.", retryAfterSeconds: 1)
        }
        if hashingShares.withLock({ $0[origin.throttleAddress, default: 0] }) >= hashingPlacesPerAddress {
            throw AccountsContext.overloadedAddress
        }
    }

    /// One client address (IPv6: one /64) may hold all the hashing pool's places but as many as it
    /// has workers: a flood from one address, on any route that hashes, is refused (`503`) while
    /// every other address still finds a place.
    var hashingPlacesPerAddress: Int { max(1, hashing.queueCapacity) }

    private static let overloadedAddress = AccountsError(
        .overloaded, "Too many password operations from this address at once; try again shortly.", retryAfterSeconds: 1)

    // MARK: - Security events outside a transaction

    /// `recordActivity` on a background thread, after the request's answer; dropped (with a
    /// warning) when thousands are waiting already.
    func recordActivityLater(_ kind: ActivityEvent.Kind, userID: UUID, origin: RequestOrigin, oncePer seconds: Double? = nil) {
        let queued = laterActivityQueue.submit { [self] in recordActivity(kind, userID: userID, origin: origin, oncePer: seconds) }
        if !queued { logger.warning("a security event was dropped: too many waiting", ["event": kind.rawValue]) }
    }

    /// `recordActivityLater` of a `locked_out` for the user with the email a refused sign-in
    /// named, if there is one (found after the answer: a refusal takes the same time for any email).
    func recordLockOutLater(email emailID: String, origin: RequestOrigin, oncePer seconds: Double) {
        let queued = laterActivityQueue.submit { [self] in
            do {
                guard let email = EmailAddress(emailID),
                    let userID = try pool.withConnection({ try UserRepository.credentials($0, email: email) })?.id
                else { return }
                recordActivity(.lockedOut, userID: userID, origin: origin, oncePer: seconds)
            } catch {
                logger.warning("could not record a security event", ["event": "locked_out", "error": String(reflecting: error)])
            }
        }
        if !queued { logger.warning("a security event was dropped: too many waiting", ["event": "locked_out"]) }
    }

    /// Records an event on its own, for a request that fails (and so has no transaction to put it
    /// in); with `oncePer`, only if there is none of its kind from that many seconds back.
    /// Bookkeeping: a failure is logged, not the request's failure.
    func recordActivity(_ kind: ActivityEvent.Kind, userID: UUID, origin: RequestOrigin, oncePer seconds: Double? = nil) {
        do {
            try pool.withConnection { connection in
                if let seconds {
                    try ActivityRepository.recordOnce(connection, userID: userID, kind, origin: origin, withinSeconds: seconds)
                } else {
                    try ActivityRepository.record(connection, userID: userID, kind, origin: origin)
                }
            }
        } catch {
            logger.warning("could not record a security event", ["event": kind.rawValue, "error": String(reflecting: error)])
        }
    }
}

/// The hashing pool's lane of the route being served: set by the API's route table from the
/// route's declaration, around its handler; the services' password work runs in it.
public enum HashingLane {
    @TaskLocal public static var declared: HashingPool.Lane?
}
