/// A SQL statement whose interpolated values become `$n` parameters, never SQL text.
///
///     let query: PostgresQuery = "SELECT id FROM users WHERE email = \(email)"
///     // sql: "SELECT id FROM users WHERE email = $1", binds: [email]
///
/// Raw SQL can only enter through the greppable `\(unsafeRaw:)` interpolation or
/// `init(unsafeSQL:binds:)`; identifiers through `\(identifier:)`, which quotes them.
public struct PostgresQuery: Sendable, Hashable, ExpressibleByStringInterpolation {
    /// The statement text with `$1`, `$2`, … placeholders.
    public internal(set) var sql: String
    /// The parameter values.
    public internal(set) var binds: PostgresBindings

    /// Builds a query from SQL that the caller vouches for; prefer string interpolation.
    public init(unsafeSQL sql: String, binds: PostgresBindings = PostgresBindings()) {
        self.sql = sql
        self.binds = binds
    }

    public init(stringLiteral value: String) {
        self.sql = value
        self.binds = PostgresBindings()
    }

    public init(stringInterpolation: StringInterpolation) {
        self.sql = stringInterpolation.sql
        self.binds = stringInterpolation.binds
    }

    /// Collects literal segments as SQL and interpolated values as parameters.
    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        public typealias StringLiteralType = String
        var sql: String
        var binds: PostgresBindings

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + 4 * interpolationCount)
            binds = PostgresBindings()
        }

        public mutating func appendLiteral(_ literal: String) {
            sql.append(literal)
        }

        /// A value, sent as the next `$n` parameter.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            binds.append(value)
            sql.append("$")
            sql.append(String(binds.count))
        }

        /// An optional value; `nil` is sent as NULL.
        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            if let value { binds.append(value) } else { binds.appendNull() }
            sql.append("$")
            sql.append(String(binds.count))
        }

        /// An identifier (table, column, database name), double-quoted with quotes doubled.
        public mutating func appendInterpolation(identifier: String) {
            sql.append("\"")
            for character in identifier {
                if character == "\"" { sql.append("\"\"") } else if character != "\0" { sql.append(character) }
            }
            sql.append("\"")
        }

        /// SQL text pasted verbatim. Never pass user input: this is the one unsafe door.
        public mutating func appendInterpolation(unsafeRaw sql: String) {
            self.sql.append(sql)
        }
    }
}

extension PostgresQuery: CustomStringConvertible {
    /// The SQL text and the parameter count, never the values.
    public var description: String { "\(sql) [\(binds.count) parameter(s)]" }
}
