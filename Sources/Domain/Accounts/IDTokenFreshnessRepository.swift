import FoundationEssentials
import Postgres

/// The SQL of an ID token's freshness: the nonces this server issued (`id_token_nonces`) and the
/// tokens it accepted (`used_id_tokens`), both by their SHA-256.
enum IDTokenFreshnessRepository {
    static func insertNonce(_ connection: PostgresConnection, hash: [UInt8], expiresAt: Date) throws {
        try connection.execute("INSERT INTO id_token_nonces (nonce_hash, expires_at) VALUES (\(hash), \(expiresAt))")
    }

    /// Uses up an issued nonce live at `now`: false when it was never issued, is used or expired.
    static func consumeNonce(_ connection: PostgresConnection, hash: [UInt8], at now: Date) throws -> Bool {
        try connection.execute("DELETE FROM id_token_nonces WHERE nonce_hash = \(hash) AND expires_at > \(now)") == 1
    }

    /// Records an accepted token until it expires: false when it was accepted before.
    static func markUsed(_ connection: PostgresConnection, tokenHash: [UInt8], expiresAt: Date) throws -> Bool {
        try connection.execute(
            "INSERT INTO used_id_tokens (token_hash, expires_at) VALUES (\(tokenHash), \(expiresAt)) ON CONFLICT (token_hash) DO NOTHING") == 1
    }

    /// Deletes up to `limit` expired nonces and tokens; returns how many.
    static func purgeExpired(_ connection: PostgresConnection, limit: Int, at now: Date) throws -> Int {
        try connection.execute(
            "DELETE FROM id_token_nonces WHERE nonce_hash IN (SELECT nonce_hash FROM id_token_nonces WHERE expires_at <= \(now) LIMIT \(limit))")
            + connection.execute(
                "DELETE FROM used_id_tokens WHERE token_hash IN (SELECT token_hash FROM used_id_tokens WHERE expires_at <= \(now) LIMIT \(limit))")
    }
}
