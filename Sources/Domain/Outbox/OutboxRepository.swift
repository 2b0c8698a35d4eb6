import FoundationEssentials
import JSON
import Postgres

/// The SQL of `mail_outbox` (migration 0004); every value is a bound parameter.
public enum OutboxRepository {
    /// Queues a mail in the caller's transaction: it is sent if and only if that transaction commits.
    public static func enqueue(_ connection: PostgresConnection, _ mail: OutgoingMail) throws {
        var variables = JSONObject()
        for (name, value) in mail.variables.sorted(by: { $0.key < $1.key }) { variables[name] = .string(value) }
        try connection.execute(
            """
            INSERT INTO mail_outbox (template, recipient, variables)
            VALUES (\(mail.kind.rawValue), \(mail.recipient), \(PostgresJSON(JSONValue.object(variables).serializedString()))::jsonb)
            """)
    }

    /// A claimed row: the mail, and what identifies it for the relay and the updates that follow.
    struct Claimed {
        let id: Int64
        let attempts: Int
        let createdAt: Date
        /// Nil when the row names a template this build does not know (a newer instance queued it).
        let mail: OutgoingMail?
        let kindText: String
    }

    /// Takes up to `limit` due rows for `leaseSeconds`: other senders skip them (SKIP LOCKED while
    /// this statement runs, then their moved `next_attempt_at`), so each mail goes out once; a
    /// sender that dies mid-batch leaves its rows to be taken again when the lease ends.
    static func claim(_ connection: PostgresConnection, limit: Int, leaseSeconds: Double) throws -> [Claimed] {
        let rows = try connection.query(
            """
            UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => \(leaseSeconds)), attempts = attempts + 1
            WHERE id IN (
                SELECT id FROM mail_outbox WHERE status = 'pending' AND next_attempt_at <= now()
                ORDER BY next_attempt_at, id LIMIT \(limit) FOR UPDATE SKIP LOCKED)
            RETURNING id, attempts, created_at, template, recipient, variables::text AS variables
            """)
        return try rows.map { row in
            let id = try row.decode(Int64.self, column: "id")
            let attempts = Int(try row.decode(Int32.self, column: "attempts"))
            let createdAt = try row.decode(Date.self, column: "created_at")
            let kindText = try row.decode(String.self, column: "template")
            let recipient = try row.decode(String.self, column: "recipient")
            let variablesText = try row.decode(String.self, column: "variables")
            var variables: [String: String] = [:]
            if let object = try JSONParser.parse(variablesText).objectValue {
                for (name, value) in object { if let text = value.stringValue { variables[name] = text } }
            }
            let mail = MailKind(rawValue: kindText).map { OutgoingMail($0, to: recipient, variables) }
            return Claimed(id: id, attempts: attempts, createdAt: createdAt, mail: mail, kindText: kindText)
        }.sorted { $0.id < $1.id }
    }

    /// Keeps rows of a batch still being sent out of other senders' hands for another `seconds`.
    static func extendLease(_ connection: PostgresConnection, ids: [Int64], seconds: Double) throws {
        try connection.execute(
            """
            UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => \(seconds))
            WHERE id = ANY (\(PostgresArray(ids))::bigint[]) AND status = 'pending'
            """)
    }

    /// The relay took the mail: the row, and the token it carried, are gone.
    static func delivered(_ connection: PostgresConnection, id: Int64) throws {
        try connection.execute("DELETE FROM mail_outbox WHERE id = \(id)")
    }

    /// A transient failure: tried again after `delaySeconds`.
    static func retry(_ connection: PostgresConnection, id: Int64, delaySeconds: Double, error: String) throws {
        try connection.execute(
            """
            UPDATE mail_outbox SET next_attempt_at = now() + make_interval(secs => \(delaySeconds)), last_error = \(error)
            WHERE id = \(id)
            """)
    }

    /// A permanent failure: kept with the relay's reply for the operator, without its variables.
    static func failed(_ connection: PostgresConnection, id: Int64, error: String) throws {
        try connection.execute(
            "UPDATE mail_outbox SET status = 'failed', last_error = \(error), variables = '{}'::jsonb WHERE id = \(id)")
    }

    /// Deletes up to `limit` failed rows older than `olderThanSeconds`; returns how many.
    static func purgeFailed(_ connection: PostgresConnection, olderThanSeconds: Double, limit: Int) throws -> Int {
        try connection.execute(
            """
            DELETE FROM mail_outbox WHERE id IN (
                SELECT id FROM mail_outbox WHERE status = 'failed' AND created_at < now() - make_interval(secs => \(olderThanSeconds))
                LIMIT \(limit))
            """)
    }
}
