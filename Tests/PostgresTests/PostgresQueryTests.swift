import Postgres
import TestSupport
import Testing

@Suite(.testThreads) struct PostgresQueryTests {
    @Test func interpolatedValuesBecomeNumberedParameters() {
        let email = "ayu@example.com"
        let limit = 10
        let missing: String? = nil
        let query: PostgresQuery = "SELECT id FROM users WHERE email = \(email) AND note IS \(missing) LIMIT \(limit)"
        #expect(query.sql == "SELECT id FROM users WHERE email = $1 AND note IS $2 LIMIT $3")
        #expect(query.binds.count == 3)
        #expect(!query.description.contains(email))
    }

    @Test func rawSQLNeedsTheUnsafeSpellingAndIdentifiersAreQuoted() {
        let order = "created_at DESC"
        let query: PostgresQuery = "SELECT * FROM \(identifier: "we\"ird") ORDER BY \(unsafeRaw: order)"
        #expect(query.sql == "SELECT * FROM \"we\"\"ird\" ORDER BY created_at DESC")
        #expect(query.binds.count == 0)
    }

    /// A declared select list goes into the query as `expression AS name`, and its columns are read
    /// by name, also when it follows another list in the row.
    @Test func declaredColumnsAreSelectedAndReadByName() throws {
        let first = SQLColumns(["id": "t.id", "label": "upper(t.label)"])
        let second = first.followed(by: SQLColumns(["doubled": "t.id * 2", "note": "NULL::text"]))
        let query: PostgresQuery = "SELECT \(first), \(second) FROM (VALUES (7, 'seven')) AS t (id, label) WHERE t.id = \(7)"
        #expect(query.sql.hasPrefix("SELECT t.id AS id, upper(t.label) AS label, t.id * 2 AS doubled, NULL::text AS note FROM"))
        #expect(query.binds.count == 1)
        let row = try TestDatabase.pool().query(query)[0]
        #expect(try row.decode(Int.self, "id", of: first) == 7)
        #expect(try row.decode(String.self, "label", of: first) == "SEVEN")
        #expect(try row.decode(Int.self, "doubled", of: second) == 14)
        #expect(try row.decode(String?.self, "note", of: second) == nil)
        // A row without the declared list's columns is an error, not another column's value.
        let short = try TestDatabase.pool().query("SELECT \(first) FROM (VALUES (7, 'seven')) AS t (id, label)")[0]
        #expect(throws: PostgresError.self) { try short.decode(Int.self, "doubled", of: second) }
    }

    @Test func injectionAttemptsAreStoredVerbatim() throws {
        let pool = try TestDatabase.pool()
        let table = TestDatabase.uniqueName("injection")
        try pool.execute("CREATE TABLE \(identifier: table) (name text)")
        let attacks = ["'); DROP TABLE \(table); --", "x' OR '1'='1", "$1", "\\'; SELECT 1; --", "\" ; \\x00"]
        for attack in attacks {
            try pool.execute("INSERT INTO \(identifier: table) (name) VALUES (\(attack))")
        }
        let stored = try pool.query("SELECT name FROM \(identifier: table) ORDER BY name").map { try $0.decode(String.self, at: 0) }
        #expect(stored == attacks.sorted())
        let matches = try pool.query("SELECT count(*) FROM \(identifier: table) WHERE name = \("x' OR '1'='1")")[0].decode(Int.self, at: 0)
        #expect(matches == 1)
    }

    @Test func aNulByteInTextIsRefusedNotTruncated() throws {
        let pool = try TestDatabase.pool()
        let error = postgresError { try pool.query("SELECT \("abc\u{0}def")::text") }
        #expect(error?.code == .encodingFailed)
    }
}
