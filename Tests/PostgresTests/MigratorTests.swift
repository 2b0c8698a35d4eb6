import TestSupport
import Foundation
import Postgres
import Synchronization
import Testing

@Suite(.testThreads) struct MigratorTests {
    /// A fresh database (migrations share the fixed `schema_migrations` table) and a directory.
    func makeEnvironment(_ files: [String: String]) throws -> (pool: PostgresPool, directory: String) {
        let name = TestDatabase.uniqueName("migrations")
        let connectionString = try TestDatabase.cluster().createDatabase(name)
        let directory = NSTemporaryDirectory() + "/" + name
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (file, sql) in files {
            try sql.write(toFile: directory + "/" + file, atomically: true, encoding: .utf8)
        }
        let pool = PostgresPool(configuration: try PostgresConfiguration(connectionString: connectionString), size: 4)
        return (pool, directory)
    }

    let files = [
        "0001_accounts.sql": """
        -- several statements in one file
        CREATE TABLE accounts (id bigserial PRIMARY KEY, email text NOT NULL UNIQUE);
        CREATE INDEX accounts_email_lower ON accounts (lower(email));
        INSERT INTO accounts (email) VALUES ('seed@example.com');
        """,
        "0002_sessions.sql": """
        CREATE TABLE sessions (id uuid PRIMARY KEY, account bigint REFERENCES accounts);
        DO $$ BEGIN PERFORM pg_sleep(0.2); END $$;
        """,
        "0010_note.sql": "ALTER TABLE accounts ADD COLUMN note text DEFAULT 'é✓';",
        "README.md": "not a migration",
    ]

    @Test func appliesInOrderOnceAndReportsPending() throws {
        let (pool, directory) = try makeEnvironment(files)
        defer { pool.close(); try? FileManager.default.removeItem(atPath: directory) }
        let migrator = try Migrator(directory: directory)
        #expect(migrator.migrations.map(\.version) == [1, 2, 10])
        #expect(try migrator.hasPendingMigrations(on: pool))
        #expect(try pool.withConnection { try migrator.pendingMigrations(on: $0) }.count == 3)

        #expect(try migrator.migrate(on: pool) == ["0001_accounts.sql", "0002_sessions.sql", "0010_note.sql"])
        #expect(try migrator.migrate(on: pool) == [])
        #expect(try !migrator.hasPendingMigrations(on: pool))

        let note = try pool.query("SELECT note FROM accounts")[0].decode(String.self, at: 0)
        #expect(note == "é✓")
        let recorded = try pool.query("SELECT version, name, length(checksum) FROM schema_migrations ORDER BY version")
        #expect(try recorded.map { try $0.decode((Int, String, Int).self) }.map(\.1) == ["0001_accounts.sql", "0002_sessions.sql", "0010_note.sql"])
        #expect(try recorded[0].decode(Int.self, at: 2) == 64)

        // A new file is pending until applied.
        try "CREATE TABLE later (n int);".write(toFile: directory + "/0011_later.sql", atomically: true, encoding: .utf8)
        let next = try Migrator(directory: directory)
        #expect(try pool.withConnection { try next.pendingMigrations(on: $0) } == ["0011_later.sql"])
        #expect(try next.migrate(on: pool) == ["0011_later.sql"])
    }

    @Test func concurrentMigratorsApplyEachFileExactlyOnce() throws {
        let (pool, directory) = try makeEnvironment(files)
        defer { pool.close(); try? FileManager.default.removeItem(atPath: directory) }
        let applied = Mutex<[String]>([])
        let failures = Mutex<[String]>([])
        let barrier = Barrier(4)
        try onThreads(4) { _ in
            do {
                let migrator = try Migrator(directory: directory)
                let configuration = pool.configuration
                let connection = try PostgresConnection(configuration: configuration)
                try barrier.arrive()
                let names = try migrator.migrate(on: connection)
                applied.withLock { $0 += names }
            } catch let error as BarrierTimeout {
                throw error
            } catch {
                failures.withLock { $0.append(String(reflecting: error)) }
            }
        }
        #expect(failures.withLock { $0 } == [])
        #expect(applied.withLock { $0 }.sorted() == ["0001_accounts.sql", "0002_sessions.sql", "0010_note.sql"])
        #expect(try pool.query("SELECT count(*) FROM schema_migrations")[0].decode(Int.self, at: 0) == 3)
        #expect(try pool.query("SELECT count(*) FROM accounts")[0].decode(Int.self, at: 0) == 1)
    }

    @Test func aChangedAppliedMigrationIsRefused() throws {
        let (pool, directory) = try makeEnvironment(files)
        defer { pool.close(); try? FileManager.default.removeItem(atPath: directory) }
        try Migrator(directory: directory).migrate(on: pool)
        try (files["0002_sessions.sql"]! + "\n-- edited").write(toFile: directory + "/0002_sessions.sql", atomically: true, encoding: .utf8)
        try "CREATE TABLE never (n int);".write(toFile: directory + "/0020_never.sql", atomically: true, encoding: .utf8)
        let error = postgresError { try Migrator(directory: directory).migrate(on: pool) }
        #expect(error?.code == .migrationChecksumMismatch)
        #expect(error?.debugDescription.contains("0002_sessions.sql") == true)
        #expect(try pool.query("SELECT to_regclass('never') IS NULL")[0].decode(Bool.self, at: 0))
    }

    @Test func aFailingMigrationRollsBackAndNamesTheFile() throws {
        let (pool, directory) = try makeEnvironment([
            "0001_ok.sql": "CREATE TABLE ok (n int);",
            "0002_broken.sql": "CREATE TABLE half (n int);\nINSERT INTO half VALUES ('x');",
        ])
        defer { pool.close(); try? FileManager.default.removeItem(atPath: directory) }
        let error = postgresError { try Migrator(directory: directory).migrate(on: pool) }
        #expect(error?.code == .migrationFailed)
        #expect(error?.sqlState == .invalidTextRepresentation)
        #expect(error?.debugDescription.contains("0002_broken.sql") == true)
        #expect(try pool.query("SELECT to_regclass('half') IS NULL")[0].decode(Bool.self, at: 0))
        #expect(try pool.query("SELECT count(*) FROM schema_migrations")[0].decode(Int.self, at: 0) == 1)
        // The advisory lock was released: another migrator can run.
        #expect(try pool.withConnection { try Migrator(directory: directory).pendingMigrations(on: $0) } == ["0002_broken.sql"])
        #expect(
            try pool.query(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            )[0].decode(Int.self, at: 0) == 0)
    }

    @Test func badFileNamesAndDuplicateVersionsAreRejected() throws {
        let (pool, directory) = try makeEnvironment(["1_short.sql": "SELECT 1;"])
        defer { pool.close(); try? FileManager.default.removeItem(atPath: directory) }
        #expect(postgresError { _ = try Migrator(directory: directory) }?.code == .migrationFailed)
        try FileManager.default.removeItem(atPath: directory + "/1_short.sql")
        try "SELECT 1;".write(toFile: directory + "/0001_a.sql", atomically: true, encoding: .utf8)
        try "SELECT 1;".write(toFile: directory + "/0001_b.sql", atomically: true, encoding: .utf8)
        #expect(postgresError { _ = try Migrator(directory: directory) }?.code == .migrationFailed)
        #expect(postgresError { _ = try Migrator(directory: directory + "/missing") }?.code == .migrationFailed)
    }
}
