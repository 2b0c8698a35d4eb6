import FoundationEssentials
import Postgres

/// The SQL of the object storage: the queue of objects to remove, and which ids have an `s3` row.
enum ImageObjectRepository {
    /// Queues `keys` for removal in the caller's transaction (the one that deletes their rows).
    static func enqueue(_ connection: PostgresConnection, keys: [String]) throws {
        for key in keys {
            try connection.execute("INSERT INTO image_object_deletions (key) VALUES (\(key)) ON CONFLICT DO NOTHING")
        }
    }

    /// Up to `limit` keys due for an attempt, each pushed back by a backoff so that another
    /// instance draining at the same moment takes others (`SKIP LOCKED`).
    static func takeDue(_ connection: PostgresConnection, limit: Int) throws -> [String] {
        try connection.query(
            """
            UPDATE image_object_deletions SET attempts = attempts + 1,
                next_attempt_at = now() + least(interval '1 second' * power(2, least(attempts, 10)), interval '10 minutes')
            WHERE key IN (
                SELECT key FROM image_object_deletions WHERE next_attempt_at <= now()
                ORDER BY next_attempt_at LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING key
            """
        ).map { try $0.decode(String.self, at: 0) }
    }

    static func remove(_ connection: PostgresConnection, key: String) throws {
        try connection.execute("DELETE FROM image_object_deletions WHERE key = \(key)")
    }

    static func pendingCount(_ connection: PostgresConnection) throws -> Int {
        try connection.query("SELECT count(*) FROM image_object_deletions")[0].decode(Int.self, at: 0)
    }

    /// Whether an `s3` row has this id.
    static func hasObjectRow(_ connection: PostgresConnection, id: UUID) throws -> Bool {
        try !connection.query("SELECT 1 FROM images WHERE id = \(id) AND storage = 's3'").isEmpty
    }
}
