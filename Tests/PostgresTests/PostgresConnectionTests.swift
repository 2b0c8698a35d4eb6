import Postgres
import TestSupport
import Testing

@Suite(.testThreads) struct PostgresConnectionTests {
    @Test func settingsAppliedOnConnect() throws {
        let connection = try TestDatabase.connection {
            $0.applicationName = "exo-test"; $0.statementTimeout = .milliseconds(1500)
        }
        let row = try connection.query(
            "SELECT current_setting('application_name'), current_setting('TimeZone'), current_setting('DateStyle'), current_setting('statement_timeout')"
        )[0]
        let (name, zone, style, timeout) = try row.decode((String, String, String, String).self)
        #expect(name == "exo-test")
        #expect(zone == "UTC")
        #expect(style.hasPrefix("ISO"))
        #expect(timeout == "1500ms")
        #expect(connection.serverVersion >= 150000)
    }

    @Test func statementTimeoutCancelsAndKeepsTheConnection() throws {
        let connection = try TestDatabase.connection { $0.statementTimeout = .milliseconds(100) }
        let error = postgresError { try connection.query("SELECT pg_sleep(2)") }
        #expect(error?.sqlState == .queryCanceled)
        #expect(error?.code == .queryFailed)
        #expect(connection.isUsable)
        #expect(try connection.query("SELECT 1")[0].decode(Int.self, at: 0) == 1)
    }

    @Test func urlFormAndConnectionErrors() throws {
        let cluster = try TestDatabase.cluster()
        let url = "postgresql:///\(cluster.database)?host=\(cluster.socketDirectory)&user=\(cluster.user)&application_name=from-url"
        let connection = try PostgresConnection(connectionString: url)
        // The URL's own settings win over our defaults.
        #expect(try connection.query("SELECT current_setting('application_name')")[0].decode(String.self, at: 0) == "from-url")

        let invalid = postgresError { _ = try PostgresConfiguration(connectionString: "postgres://x:y@[::1") }
        #expect(invalid?.code == .invalidConfiguration)

        let nowhere = postgresError { _ = try PostgresConnection(connectionString: "host=/tmp/exo-no-such-dir dbname=x") }
        #expect(nowhere?.code == .connectionFailed)
        #expect(nowhere?.description == "The database is unavailable.")
    }

    /// A write refused because the server does not take writes (a standby: during a failover a
    /// proxy may route to the new leader before its promotion ends) breaks the connection, so
    /// that it is not lent again and the next one finds the primary.
    @Test func aWriteRefusedAsReadOnlyBreaksTheConnection() throws {
        let connection = try TestDatabase.connection()
        defer { connection.close() }
        try connection.execute("SET default_transaction_read_only = on")
        let error = postgresError { try connection.execute("CREATE TEMPORARY TABLE refused (n int)") }
        #expect(error?.code == .connectionFailed)
        #expect(error?.sqlState == .readOnlySQLTransaction)
        #expect(!connection.isUsable)
    }

    @Test func uniqueViolationMapsToSQLStateAndNamesTheConstraint() throws {
        let pool = try TestDatabase.pool()
        let table = TestDatabase.uniqueName("users")
        try pool.execute("CREATE TABLE \(identifier: table) (email text CONSTRAINT \(identifier: table + "_email_key") UNIQUE)")
        try pool.execute("INSERT INTO \(identifier: table) VALUES (\("ayu@example.com"))")
        let error = postgresError { try pool.execute("INSERT INTO \(identifier: table) VALUES (\("ayu@example.com"))") }
        #expect(error?.code == .queryFailed)
        #expect(error?.sqlState == .uniqueViolation)
        #expect(error?.constraintName == table + "_email_key")
        // Users see a generic sentence; logs get the server's message but not the key value.
        #expect(error?.description == "A database operation failed.")
        #expect(error?.debugDescription.contains("23505") == true)
        #expect(error?.debugDescription.contains("ayu@example.com") == false)
        #expect(error?.serverDetail?.contains("ayu@example.com") == true)
    }

    @Test func otherConstraintsMapToTheirSQLStates() throws {
        let pool = try TestDatabase.pool()
        let parent = TestDatabase.uniqueName("parent")
        let child = TestDatabase.uniqueName("child")
        try pool.execute("CREATE TABLE \(identifier: parent) (id int PRIMARY KEY)")
        try pool.execute("CREATE TABLE \(identifier: child) (parent int REFERENCES \(identifier: parent), n int CHECK (n > 0), v text NOT NULL)")
        #expect(postgresError { try pool.execute("INSERT INTO \(identifier: child) VALUES (\(Int32(1)), 1, 'x')") }?.sqlState == .foreignKeyViolation)
        #expect(postgresError { try pool.execute("INSERT INTO \(identifier: child) VALUES (NULL, \(-1), 'x')") }?.sqlState == .checkViolation)
        #expect(
            postgresError { try pool.execute("INSERT INTO \(identifier: child) VALUES (NULL, 1, \(String?.none))") }?.sqlState == .notNullViolation)
        #expect(postgresError { try pool.query("SELEC 1") }?.sqlState == .syntaxError)
        #expect(postgresError { try pool.query("SELECT * FROM no_such_table_here") }?.sqlState == .undefinedTable)
    }

    @Test func statementsArePreparedOncePerConnection() throws {
        let connection = try TestDatabase.connection()
        for id in 1...5 {
            let value = try connection.query("SELECT \(id) + 1 AS next")[0].decode(Int.self, column: "next")
            #expect(value == id + 1)
        }
        let prepared = try connection.query(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement = \("SELECT $1 + 1 AS next")")[0].decode(Int.self, at: 0)
        #expect(prepared == 1)
        // A failed preparation is not cached: the same text fails again cleanly, then others work.
        #expect(postgresError { try connection.query("SELECT nope") }?.sqlState == .undefinedColumn)
        #expect(postgresError { try connection.query("SELECT nope") }?.sqlState == .undefinedColumn)
        #expect(try connection.query("SELECT 2")[0].decode(Int.self, at: 0) == 2)
    }

    @Test func affectedRowsAndColumnNames() throws {
        let pool = try TestDatabase.pool()
        let table = TestDatabase.uniqueName("counts")
        try pool.execute("CREATE TABLE \(identifier: table) (n int)")
        #expect(try pool.execute("INSERT INTO \(identifier: table) SELECT generate_series(1, 7)") == 7)
        #expect(try pool.execute("UPDATE \(identifier: table) SET n = n + 1 WHERE n > \(Int32(4))") == 3)
        let rows = try pool.query("SELECT n AS \"camelCase\", n * 2 AS doubled FROM \(identifier: table) ORDER BY n")
        #expect(rows.count == 7)
        #expect(rows.columnNames == ["camelCase", "doubled"])
        #expect(try rows.last?.decode(Int.self, column: "camelCase") == 8)
    }

    @Test func closedConnectionFailsCleanly() throws {
        let connection = try TestDatabase.connection()
        connection.close()
        #expect(!connection.isUsable)
        #expect(postgresError { try connection.query("SELECT 1") }?.code == .connectionFailed)
    }
}
