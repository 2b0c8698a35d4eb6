import Postgres
import TestSupport
import Testing

@Suite(.testThreads) struct PostgresStatementTests {
    @Test func preparedOncePerConnectionAndReusedWithNewValues() throws {
        let statement = PostgresStatement(unsafeSQL: "SELECT $1::int8 * 2 AS doubled, $2::text AS label")
        let connection = try TestDatabase.connection()
        for n in 1...4 {
            var binds = PostgresBindings()
            binds.append(n)
            binds.append("run \(n)")
            let (doubled, label) = try connection.query(statement, binds)[0].decode((Int, String).self)
            #expect(doubled == 2 * n)
            #expect(label == "run \(n)")
        }
        let prepared = try connection.query(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = \(statement.sql)")[0].decode(Int.self, at: 0)
        #expect(prepared == 1)
        // A second connection prepares its own.
        var binds = PostgresBindings()
        binds.append(21)
        binds.append("other")
        #expect(try TestDatabase.connection().query(statement, binds)[0].decode(Int.self, at: 0) == 42)
    }

    @Test func otherParameterTypesAndErrors() throws {
        let statement = PostgresStatement(unsafeSQL: "SELECT $1 AS value")
        let connection = try TestDatabase.connection()
        var ints = PostgresBindings()
        ints.append(7)
        #expect(try connection.query(statement, ints)[0].decode(Int.self, at: 0) == 7)
        // Other types than the first run's go through a statement of their own.
        var texts = PostgresBindings()
        texts.append("seven")
        #expect(try connection.query(statement, texts)[0].decode(String.self, at: 0) == "seven")
        #expect(try connection.query(statement, ints)[0].decode(Int.self, at: 0) == 7)
        // A statement that cannot be prepared fails each time, and the connection stays usable.
        let broken = PostgresStatement(unsafeSQL: "SELECT nope")
        #expect(postgresError { try connection.query(broken, PostgresBindings()) }?.sqlState == .undefinedColumn)
        #expect(postgresError { try connection.query(broken, PostgresBindings()) }?.sqlState == .undefinedColumn)
        // A text parameter with a NUL byte is refused before it reaches the server.
        var nul = PostgresBindings()
        nul.append(7)
        #expect(postgresError { try connection.query(statement, nul) } == nil)
        var bad = PostgresBindings()
        bad.append("a\u{0}b")
        #expect(postgresError { try connection.query(statement, bad) }?.code == .encodingFailed)
    }
}
