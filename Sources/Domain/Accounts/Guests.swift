import Cryptography
import FoundationEssentials
import JSON
import Postgres

/// Accounts that start without an address or a password (`POST /users/guest`), as Firebase's
/// anonymous accounts do: a profile, fields, images and sessions like anyone's. A guest upgrades
/// in place (same id, data and sessions) when it gains a way back in: a confirmed address, a
/// passkey or an identity (the database ends `is_guest`, migration 0025). Guests idle for
/// `guestIdleSeconds` are deleted with what they hold (`deleteIdle`).
public final class Guests: Sendable {
    private let context: AccountsContext

    init(context: AccountsContext) {
        self.context = context
    }

    /// `POST /users/guest`: the guest and its first session (the route counts it per client address).
    public func create(firstname: String, lastname: String, data: JSONObject, origin: RequestOrigin) throws -> IssuedSession {
        try context.schema.checkFieldCount(data.count)
        let token = try SessionToken.generate()
        let issued = try context.pool.withTransaction { connection in
            let fields = try context.schema.validate(Array(data), connection)
            var user = User(
                id: UUID(), email: nil, firstname: firstname, lastname: lastname, emailVerified: false, createdAt: Date(), updatedAt: Date(),
                data: JSONObject(), version: 1)
            FieldSchema.apply(fields, to: &user.data)
            try context.schema.checkDocumentSize(user)
            user = try UserRepository.insertGuest(connection, firstname: firstname, lastname: lastname, data: user.data)
            let session = try SessionRepository.insert(
                connection, userID: user.id, tokenHash: token.hash, userAgent: origin.userAgent, lifetime: context.configuration.lifetime,
                at: context.clock.now())
            return IssuedSession(accessToken: token.text, session: session, user: user)
        }
        context.statistics.guestsCreated.add(1, ordering: .relaxed)
        SecurityEvent.log(context.logger, .registered, outcome: .success, userID: issued.user.id, origin: origin, detail: "guest")
        return issued
    }

    /// Deletes guests idle for `guestIdleSeconds` (no change to the account, no session used
    /// since), up to `limit`, each in its own transaction with `alsoDelete` (what other modules
    /// keep for it: images), which returns what to do once it committed (removing files).
    /// Returns how many went. A guest that came back or upgraded meanwhile is kept: the row is
    /// locked and checked again.
    @discardableResult
    public func deleteIdle(
        limit: Int = 500, alsoDelete: (PostgresConnection, UUID) throws -> (@Sendable () -> Void) = { _, _ in {} }
    ) throws -> Int {
        let idle = context.configuration.guestIdleSeconds
        guard idle > 0 else { return 0 }
        let cutoff = context.clock.now().addingTimeInterval(-idle)
        let candidates = try context.backgroundPool.withConnection { try GuestRepository.idle($0, before: cutoff, limit: limit) }
        var deleted = 0
        for id in candidates {
            let afterCommit = try context.backgroundPool.withTransaction { connection -> (@Sendable () -> Void)? in
                guard try GuestRepository.lockIfIdle(connection, id: id, before: cutoff) else { return nil }
                let after = try alsoDelete(connection, id)
                _ = try UserRepository.delete(connection, id: id)
                return after
            }
            guard let afterCommit else { continue }
            afterCommit()
            deleted += 1
        }
        if deleted > 0 {
            context.statistics.guestsDeleted.add(deleted, ordering: .relaxed)
            context.logger.info("idle guests deleted", ["guests.deleted": String(deleted)])
        }
        return deleted
    }
}

/// The SQL of the guest sweep.
enum GuestRepository {
    /// Guests unchanged since `cutoff` none of whose sessions was used since, oldest first.
    static func idle(_ connection: PostgresConnection, before cutoff: Date, limit: Int) throws -> [UUID] {
        try connection.query(
            """
            SELECT u.id FROM users u
            WHERE u.is_guest AND u.updated_at < \(cutoff)
                AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.user_id = u.id AND s.last_seen_at >= \(cutoff))
            ORDER BY u.updated_at LIMIT \(limit)
            """
        ).map { try $0.decode(UUID.self, at: 0) }
    }

    /// Locks the user if it is still an idle guest.
    static func lockIfIdle(_ connection: PostgresConnection, id: UUID, before cutoff: Date) throws -> Bool {
        try !connection.query(
            """
            SELECT 1 FROM users u
            WHERE u.id = \(id) AND u.is_guest AND u.updated_at < \(cutoff)
                AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.user_id = u.id AND s.last_seen_at >= \(cutoff))
            FOR UPDATE
            """
        ).isEmpty
    }
}
