import FoundationEssentials
import Postgres
import StructuredLogging
import Time

/// The throttles every part of `AccountService` counts attempts on (`ThrottleRepository`, in
/// PostgreSQL), at the clock's now. Each part names its keys and rules; an attempt is counted
/// before the work it guards, in the caller's connection when a read goes with it.
struct Throttles: Sendable {
    let pool: PostgresPool
    /// What the windows are measured by (`AccountService.Configuration.clock`).
    let clock: WallClock
    let logger: Logger

    /// The key of a user's wrong current passwords (password change, account deletion).
    static func passwordKey(_ userID: UUID) -> String { "password:" + userID.lowercasedText }

    /// Counts one attempt on every key, in `connection`, or none when any key is full: nil when
    /// counted, else the seconds to wait (`ThrottleRepository.acquire`).
    func acquire(_ connection: PostgresConnection, _ keys: [(key: String, rule: ThrottleRule)]) throws -> Int? {
        try ThrottleRepository.acquire(connection, keys, at: clock.now())
    }

    /// `acquire` on a connection of its own.
    func acquire(_ keys: [(key: String, rule: ThrottleRule)]) throws -> Int? {
        try pool.withConnection { try acquire($0, keys) }
    }

    /// Seconds until the key unlocks, or nil when it is not full (a read: counts nothing).
    func lockedFor(key: String, rule: ThrottleRule) throws -> Int? {
        try pool.withConnection { try ThrottleRepository.lockedFor($0, key: key, rule: rule, at: clock.now()) }
    }

    /// Gives back one counted attempt on each key (and clears `clearing`): the attempt succeeded,
    /// or was never hashed. Bookkeeping only: a failure is logged, not the request's failure.
    func giveBack(_ keys: [String], clearing: String? = nil) {
        do {
            try pool.withConnection { connection in
                try ThrottleRepository.release(connection, keys: keys)
                if let clearing { try ThrottleRepository.clear(connection, key: clearing) }
            }
        } catch {
            logger.warning("could not give back throttle attempts", ["keys": String(keys.count), "error": String(describing: error)])
        }
    }

    /// Clears a key, in the caller's transaction.
    func clear(_ connection: PostgresConnection, key: String) throws {
        try ThrottleRepository.clear(connection, key: key)
    }

    /// Clears an email's sign-in throttles, in the caller's transaction: its own, and those of
    /// each address with it.
    func clearSignIn(_ connection: PostgresConnection, emailID: String) throws {
        try ThrottleRepository.clearSignIn(connection, emailID: emailID)
    }
}
