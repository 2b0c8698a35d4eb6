/// One statement as a value: its SQL (prepared once per connection), its parameters, and how to
/// read a row of its result. Repositories build them; whatever runs them (a pooled connection, an
/// event loop's pipeline: `QueryExecutor`) needs to know nothing else.
///
///     static let byID = PostgresStatement(unsafeSQL: "SELECT id, name FROM users WHERE id = $1")
///     static func find(_ id: UUID) -> PreparedQuery<(UUID, String)> {
///         var binds = PostgresBindings()
///         binds.append(id)
///         return PreparedQuery(byID, binds) { try ($0.next(), $0.next()) }
///     }
public struct PreparedQuery<Row>: Sendable {
    public let statement: PostgresStatement
    public let binds: PostgresBindings
    /// Reads one row, column after column.
    public let decode: @Sendable (inout PostgresColumns) throws -> Row

    public init(
        _ statement: PostgresStatement, _ binds: PostgresBindings,
        decode: @escaping @Sendable (inout PostgresColumns) throws -> Row
    ) {
        self.statement = statement
        self.binds = binds
        self.decode = decode
    }

    /// Decodes every row of a result.
    public func rows(_ result: PostgresRows) throws -> [Row] {
        var decoded: [Row] = []
        decoded.reserveCapacity(result.count)
        for row in result {
            var columns = PostgresColumns(row)
            decoded.append(try decode(&columns))
        }
        return decoded
    }
}

/// The columns of a row read in order, so that a decoder composed of others (a session row that
/// carries its user) needs no column offsets.
public struct PostgresColumns {
    public let row: PostgresRow
    /// The index of the next column to read.
    public private(set) var index: Int32 = 0

    public init(_ row: PostgresRow) {
        self.row = row
    }

    /// Decodes the next column.
    @inline(__always)
    public mutating func next<Value: PostgresDecodable>(_: Value.Type = Value.self) throws -> Value {
        guard index < Int32(row.columnCount) else {
            throw PostgresError(code: .decodingFailed, context: "asked for more columns than the row's \(row.columnCount)")
        }
        defer { index += 1 }
        return try row.decodeColumn(index, as: Value.self)
    }
}

extension PostgresConnection {
    /// Runs a prepared query and decodes its rows.
    public func query<Row>(_ query: PreparedQuery<Row>) throws -> [Row] {
        try query.rows(try self.query(query.statement, query.binds))
    }
}
