import CLibPQ

/// The columns a statement selects, declared once: for each, the SQL expression and the name it
/// is read back by. Put into a query as its select list (`SELECT \(UserRepository.columns) FROM …`,
/// each item `expression AS name`), so that no column list enters SQL through `unsafeRaw`, and
/// read by name (`row.decode(String.self, "email", of: UserRepository.columns)`), so that no decoder
/// counts offsets. Lists compose (`followed(by:)`): one row holds a list's columns, then the next's.
public struct SQLColumns: Sendable, CustomStringConvertible {
    /// The names, in the order of the select list.
    public let names: [String]
    let expressions: [String]
    private let positions: [String: Int32]
    /// Where this list starts in the row (non-zero for the later lists of a composition).
    let offset: Int

    /// `columns` in order: the name to read each by, and its SQL expression (static SQL, never
    /// anything a client sent). Names are SQL identifiers: lowercase, digits and underscores.
    public init(_ columns: KeyValuePairs<String, String>) {
        self.init(names: columns.map(\.key), expressions: columns.map(\.value), offset: 0)
    }

    private init(names: [String], expressions: [String], offset: Int) {
        precondition(names.allSatisfy(SQLColumns.isIdentifier), "column names are lowercase SQL identifiers: \(names)")
        precondition(Set(names).count == names.count, "a column name is declared twice: \(names)")
        self.names = names
        self.expressions = expressions
        self.offset = offset
        positions = Dictionary(uniqueKeysWithValues: names.enumerated().map { ($1, Int32($0)) })
    }

    private static func isIdentifier(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f }
    }

    /// The select list: `expression AS name, …`.
    public var sql: String {
        zip(expressions, names).map { "\($0) AS \($1)" }.joined(separator: ", ")
    }

    public var count: Int { names.count }

    /// The select list, as in a statement's text (`PostgresStatement(unsafeSQL:)`).
    public var description: String { sql }

    /// `next` as it is read when it follows this list in one row: its names must differ from this
    /// list's. `SELECT \(a), \(a.followed(by: b))` selects both; `b`'s columns are read by name
    /// through the returned list.
    public func followed(by next: SQLColumns) -> SQLColumns {
        precondition(Set(names).isDisjoint(with: next.names), "the lists share a column name: \(Set(names).intersection(next.names))")
        return SQLColumns(names: next.names, expressions: next.expressions, offset: offset + count)
    }

    /// One declared column, found once (a `static let` beside the list): reading it through a list
    /// costs an addition, not a search by name.
    public struct Column: Sendable {
        public let name: String
        /// Its place in its list.
        let position: Int32
    }

    /// The column declared as `name`; a name not declared is a programming error.
    public func column(_ name: String) -> Column {
        guard let position = positions[name] else { preconditionFailure("no column \(name) in \(names)") }
        return Column(name: name, position: position)
    }
}

extension PostgresRow {
    /// Decodes the column declared as `name` in `columns`.
    @inline(__always)
    public func decode<Value: PostgresDecodable>(_: Value.Type, _ name: String, of columns: SQLColumns) throws -> Value {
        try decode(Value.self, columns.column(name), of: columns)
    }

    /// Decodes `column` of `columns` (a list it was found in, or that list where it follows another).
    @inline(__always)
    public func decode<Value: PostgresDecodable>(_: Value.Type, _ column: SQLColumns.Column, of columns: SQLColumns) throws -> Value {
        assert(columns.names[Int(column.position)] == column.name, "\(column.name) is not a column of \(columns.names)")
        return try decode(Value.self, at: Int32(columns.offset) + column.position, named: column.name)
    }

    @inline(__always)
    private func decode<Value: PostgresDecodable>(_: Value.Type, at index: Int32, named name: String) throws -> Value {
        guard index < Int32(columnCount) else {
            throw PostgresError(code: .decodingFailed, columnName: name, context: "the row has \(columnCount) columns, fewer than its declaration")
        }
        // Tests run debug builds: a statement whose select list is not its declaration (an
        // alias, an order) is caught there.
        assert(String(cString: PQfname(result.handle, index)) == name, "column \(index) is not \(name)")
        return try decodeColumn(index, as: Value.self)
    }
}

extension PostgresQuery.StringInterpolation {
    /// A declared select list (`SQLColumns.sql`): static SQL, with no value in it.
    public mutating func appendInterpolation(_ columns: SQLColumns) {
        appendInterpolation(unsafeRaw: columns.sql)
    }
}
