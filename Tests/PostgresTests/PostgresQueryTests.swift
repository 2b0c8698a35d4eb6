import Postgres
import Testing

@Suite struct PostgresQueryTests {
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
