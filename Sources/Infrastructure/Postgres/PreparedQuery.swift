/// One statement as a value: its SQL (prepared once per connection), its parameters, and how to
/// read a row of its result. Repositories build them; whatever runs them (a pooled connection, an
/// event loop's pipeline: `QueryExecutor`) needs to know nothing else.
///
///     static let byID = PostgresStatement(unsafeSQL: "SELECT id, name FROM users WHERE id = $1")
///     static func find(_ id: UUID) -> PreparedQuery<(UUID, String)> {
///         var binds = PostgresBindings()
///         binds.append(id)
///         return PreparedQuery(byID, binds) { try ($0.decode(UUID.self, column: "id"), $0.decode(String.self, column: "name")) }
///     }
public struct PreparedQuery<Row>: Sendable {
    public let statement: PostgresStatement
    public let binds: PostgresBindings
    /// Reads one row (by its columns' names: `SQLColumns`, or `decode(_:column:)`).
    public let decode: @Sendable (PostgresRow) throws -> Row

    public init(
        _ statement: PostgresStatement, _ binds: PostgresBindings,
        decode: @escaping @Sendable (PostgresRow) throws -> Row
    ) {
        self.statement = statement
        self.binds = binds
        self.decode = decode
    }

    /// Decodes every row of a result.
    public func rows(_ result: PostgresRows) throws -> [Row] {
        var decoded: [Row] = []
        decoded.reserveCapacity(result.count)
        for row in result { decoded.append(try decode(row)) }
        return decoded
    }
}

extension PostgresConnection {
    /// Runs a prepared query and decodes its rows.
    public func query<Row>(_ query: PreparedQuery<Row>) throws -> [Row] {
        try query.rows(try self.query(query.statement, query.binds))
    }
}
