import Synchronization

/// A statement whose SQL text is fixed once, typically at start-up, for a query that runs on
/// every request: each connection prepares it on first use and then finds it by its number,
/// without building or hashing the SQL text again (`PostgresQuery`'s cache hashes the whole text
/// on every run).
///
///     let lookup = PostgresStatement(unsafeSQL: "SELECT name FROM users WHERE id = $1")
///     var binds = PostgresBindings()
///     binds.append(id)
///     let rows = try connection.query(lookup, binds)
///
/// Create statements once and keep them: every one takes a slot in each connection that runs it.
public final class PostgresStatement: Sendable {
    /// The statement text with `$1`, `$2`, … placeholders.
    public let sql: String
    /// Unique in the process; the connection's index of its prepared form.
    let id: Int
    /// The server-side name of its prepared form, on every connection.
    var preparedName: String { "exo_fixed_\(id)" }

    private static let nextID = Atomic<Int>(0)

    /// Builds a statement from SQL that the caller vouches for: parameters are `$n`, never
    /// pasted values.
    public init(unsafeSQL sql: String) {
        self.sql = sql
        id = PostgresStatement.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    }
}
