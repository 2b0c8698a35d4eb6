import FoundationEssentials
import Postgres

/// What the live event streams read (`LiveEventHub`, through the API's event source): a user's
/// latest event number, what their streams missed, which sessions still live, and the marks of
/// users with streams on an instance.
public final class UserEvents: Sendable {
    private let context: AccountsContext

    init(context: AccountsContext) {
        self.context = context
    }

    /// Marks (or refreshes the marks of) users with streams on `instance`. Without waiting for
    /// the disk: a mark lost in a crash costs only notifications (the streams' sweeps and resyncs
    /// cover it), and a stream's first answer waits for this (`bench/events.sh`: 10,000 streams of
    /// distinct users opened at 640 a second with an fsync each, 1,350 without).
    public func watchLiveEvents(of users: [UUID], instance: UUID) throws {
        try context.pool.withTransaction { connection in
            try UserEventRepository.withoutWaitingForTheDisk(connection)
            try UserEventRepository.watch(connection, users: users, instance: instance)
        }
    }

    /// Removes `instance`'s marks for these users (their last stream there ended long ago).
    public func unwatchLiveEvents(of users: [UUID], instance: UUID) throws {
        try context.pool.withTransaction { connection in
            try UserEventRepository.withoutWaitingForTheDisk(connection)
            try UserEventRepository.unwatch(connection, users: users, instance: instance)
        }
    }

    /// The latest event numbers of `users`, and which of `sessions` still exist, in one borrowed
    /// connection; ids as `UUID.lowercasedText` gives them, both ways.
    public func liveEventSweep(users: [String], sessions: [String]) throws -> (latest: [String: Int64], liveSessions: Set<String>) {
        try context.pool.withConnection { try UserEventRepository.sweep($0, users: users, sessions: sessions, at: context.clock.now()) }
    }

    /// The user's latest event number: a stream opened now starts after it.
    public func latestEventNumber(of userID: UUID) throws -> Int64 {
        guard let latest = try context.pool.withConnection({ try UserEventRepository.latest($0, userID: userID) }) else {
            throw AccountsError.invalidToken
        }
        return latest
    }

    /// What streams of `userID` missed after `after` (at most `limit` events), and which of
    /// `sessions` still exist, in one borrowed connection.
    public func eventBacklog(of userID: UUID, after: Int64, limit: Int, sessions: [UUID]) throws -> UserEventBacklog {
        try context.pool.withConnection { connection in
            let live = try UserEventRepository.liveSessions(connection, ids: sessions, at: context.clock.now())
            // Read before the events: every event up to it has committed, so the list has it.
            let latest = try UserEventRepository.latest(connection, userID: userID) ?? 0
            let events = try UserEventRepository.events(connection, userID: userID, after: after, limit: limit)
            let user = events.contains { $0.kind == .profile } ? try UserRepository.find(connection, id: userID) : nil
            return UserEventBacklog(events: events, latest: latest, truncated: events.count == limit, user: user, liveSessions: live)
        }
    }
}
