import FoundationEssentials
import Postgres

/// The SQL of `account_tokens` (migrations 0004, 0009, 0010, 0023): mailed tokens, kept only as their
/// SHA-256. A row is made as a slot, without a hash, when its mail is queued; the mail's sender
/// makes the token and stores its hash just before sending (`mint`), so no table holds a token.
enum AccountTokenRepository {
    /// What a mailed token is for.
    enum Purpose: String {
        case passwordReset = "password_reset"
        case emailVerification = "email_verification"
        /// Confirms a pending change of address; bound to the new address, where it is mailed.
        case emailChange = "email_change"
        /// Puts back the address a change moved away from; mailed there, bound to it.
        case emailChangeUndo = "email_change_undo"
        /// Removes a way in that was added (its `target`) and ends every session; mailed to the
        /// account's verified address.
        case signInMethodRemoval = "sign_in_method_removal"
    }

    /// The way in a removal link removes.
    enum Target: Equatable {
        case passkey(UUID)
        case identity(UUID)

        var kind: String {
            switch self {
            case .passkey: "passkey"
            case .identity: "identity"
            }
        }

        var id: UUID {
            switch self {
            case .passkey(let id), .identity(let id): id
            }
        }

        init?(kind: String?, id: UUID?) {
            guard let id else { return nil }
            switch kind {
            case "passkey": self = .passkey(id)
            case "identity": self = .identity(id)
            default: return nil
            }
        }
    }

    /// A live token, used up.
    struct Consumed {
        let id: Int64
        let userID: UUID
        let purpose: Purpose
        /// The address the token is bound to, normalized, and as it was written (undo links).
        let emailNormalized: String?
        let email: String?
        /// The way in of a removal link.
        let target: Target?
    }

    /// Makes the slot of a token to be mailed and returns its id, for the mail's `tokenSlot`;
    /// `email` binds the token to the address it is sent to (verification, a change, an undo).
    /// It is made at `now` (`created_at` too, which the reset resolver compares with its requests').
    static func insertSlot(
        _ connection: PostgresConnection, userID: UUID, purpose: Purpose, email: EmailAddress? = nil, target: Target? = nil,
        lifetimeSeconds: Double, at now: Date
    ) throws -> Int64 {
        try connection.query(
            """
            INSERT INTO account_tokens (token_hash, user_id, purpose, email_normalized, email, target_kind, target_id, created_at, expires_at)
            VALUES (NULL, \(userID), \(purpose.rawValue), \(email?.normalized), \(email?.value), \(target?.kind), \(target?.id),
                    \(now), \(now) + make_interval(secs => \(lifetimeSeconds)))
            RETURNING id
            """)[0].decode(Int64.self, at: 0)
    }

    /// Stores the hash of a new token in a slot still live (replacing the one of an earlier
    /// attempt at its mail); false when the slot is gone (used, voided by a newer request or a
    /// password change, or expired): its mail would carry a dead link.
    static func mint(_ connection: PostgresConnection, slot: Int64, hash: [UInt8], at now: Date) throws -> Bool {
        try connection.execute("UPDATE account_tokens SET token_hash = \(hash) WHERE id = \(slot) AND expires_at > \(now)") == 1
    }

    /// The login email of a live token's user (a read: the token stays usable), so that a dead
    /// token is refused before any hashing; nil when it is not live.
    static func liveUserEmail(_ connection: PostgresConnection, hash: [UInt8], purpose: Purpose, at now: Date) throws -> String? {
        try connection.query(
            """
            SELECT u.email_normalized FROM account_tokens t JOIN users u ON u.id = t.user_id
            WHERE t.token_hash = \(hash) AND t.purpose = \(purpose.rawValue) AND t.expires_at > \(now)
            """
        ).first.map { try $0.decode(String.self, at: 0) }
    }

    /// Uses a live token of one of `purposes` up: deletes it and returns what it was for. Of two
    /// requests racing with one token, only one gets a row.
    static func consume(_ connection: PostgresConnection, hash: [UInt8], purposes: [Purpose], at now: Date) throws -> Consumed? {
        let rows = try connection.query(
            """
            DELETE FROM account_tokens
            WHERE token_hash = \(hash) AND purpose = ANY (\(PostgresArray(purposes.map(\.rawValue)))::text[]) AND expires_at > \(now)
            RETURNING id, user_id, purpose, email_normalized, email, target_kind, target_id
            """)
        return try rows.first.map { row in
            let purposeText = try row.decode(String.self, column: "purpose")
            guard let purpose = Purpose(rawValue: purposeText) else {
                throw PostgresError(code: .decodingFailed, columnName: "purpose", context: "unknown purpose \(purposeText)")
            }
            return Consumed(
                id: try row.decode(Int64.self, column: "id"), userID: try row.decode(UUID.self, column: "user_id"), purpose: purpose,
                emailNormalized: try row.decode(String?.self, column: "email_normalized"), email: try row.decode(String?.self, column: "email"),
                target: Target(kind: try row.decode(String?.self, column: "target_kind"), id: try row.decode(UUID?.self, column: "target_id")))
        }
    }

    /// The user's undo links made after the slot `id` (by later changes): an undo puts back the
    /// address of its link, and the links of changes made since then would only move it again.
    static func deleteUndoLinks(_ connection: PostgresConnection, userID: UUID, after id: Int64) throws {
        try connection.execute(
            "DELETE FROM account_tokens WHERE user_id = \(userID) AND purpose = \(Purpose.emailChangeUndo.rawValue) AND id > \(id)")
    }

    /// Voids every token of a purpose the user holds (a newer request, a password change, a new address).
    static func deleteAll(_ connection: PostgresConnection, userID: UUID, purposes: [Purpose]) throws {
        try connection.execute(
            "DELETE FROM account_tokens WHERE user_id = \(userID) AND purpose = ANY (\(PostgresArray(purposes.map(\.rawValue)))::text[])")
    }

    /// Drops the queued reset requests of an address (migration 0004): a password change or a new
    /// address voids them as it voids the tokens.
    static func deletePendingResets(_ connection: PostgresConnection, email: String) throws {
        try connection.execute("DELETE FROM password_reset_requests WHERE email_normalized = \(email)")
    }

    /// Queues a reset request for `resolvePendingResets` (registered address or not: the same
    /// statement either way); its token will expire `lifetimeSeconds` after `now`.
    static func queueReset(
        _ connection: PostgresConnection, email: EmailAddress, lifetimeSeconds: Double, address: String?, agent: String?, at now: Date
    ) throws {
        try connection.execute(
            """
            INSERT INTO password_reset_requests (email_normalized, lifetime_seconds, client_address, client_agent, requested_at)
            VALUES (\(email.normalized), \(lifetimeSeconds), \(address), \(agent), \(now))
            """)
    }

    /// Turns up to `limit` queued reset requests into tokens and mail (`exo_resolve_password_resets`);
    /// returns how many requests it took.
    static func resolvePendingResets(_ connection: PostgresConnection, limit: Int) throws -> Int {
        Int(try connection.query("SELECT exo_resolve_password_resets(\(limit)::integer)")[0].decode(Int32.self, at: 0))
    }

    /// Deletes up to `limit` tokens expired at `now`; returns how many.
    static func purgeExpired(_ connection: PostgresConnection, limit: Int, at now: Date) throws -> Int {
        try connection.execute(
            """
            DELETE FROM account_tokens WHERE id IN (
                SELECT id FROM account_tokens WHERE expires_at < \(now) LIMIT \(limit))
            """)
    }
}
