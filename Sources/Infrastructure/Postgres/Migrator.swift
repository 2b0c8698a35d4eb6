import Files
import Glibc

/// Applies `NNNN_name.sql` files from a directory in order, once each, recorded in `schema_migrations`.
///
/// Each file runs in its own transaction. A session advisory lock serialises concurrent migrators
/// (several instances starting at once). An applied file whose SHA-256 changed stops migration.
public struct Migrator: Sendable {
    /// One migration file.
    public struct Migration: Sendable, Hashable {
        /// The leading number of the file name.
        public let version: Int64
        /// The file name, e.g. `0001_users.sql`.
        public let fileName: String
        /// The file's SQL (may hold several statements).
        public let sql: String
    }

    /// The migration files, ordered by version.
    public let migrations: [Migration]
    /// The key of the advisory lock held while migrating (`pg_advisory_lock`).
    public static let advisoryLockKey: Int64 = 0x6578_6F73_6D69_6772  // "exosmigr"

    /// Reads every `*.sql` file of `directory`; names must be `<digits>_<name>.sql`, versions unique.
    public init(directory: String) throws {
        var files: [(name: String, contents: String)] = []
        for fileName in try Self.fileNames(in: directory) where fileName.hasSuffix(".sql") {
            files.append((fileName, try Self.readFile(directory + "/" + fileName)))
        }
        try self.init(files: files)
    }

    /// Migrations from files' names and SQL (read from a directory, or compiled in); names must
    /// be `<digits>_<name>.sql`, versions unique.
    public init(files: [(name: String, contents: String)]) throws {
        var migrations: [Migration] = []
        for (fileName, sql) in files {
            let digits = fileName.prefix(while: { $0.isASCII && $0.isNumber })
            guard digits.count >= 4, fileName.dropFirst(digits.count).first == "_",
                let version = Int64(digits)
            else {
                throw PostgresError(code: .migrationFailed, context: "\(fileName): name must be NNNN_name.sql")
            }
            migrations.append(Migration(version: version, fileName: fileName, sql: sql))
        }
        try self.init(migrations: migrations)
    }

    /// Uses migrations built in memory.
    public init(migrations: [Migration]) throws {
        let sorted = migrations.sorted { $0.version < $1.version }
        for (previous, next) in zip(sorted, sorted.dropFirst()) where previous.version == next.version {
            throw PostgresError(
                code: .migrationFailed,
                context: "\(previous.fileName) and \(next.fileName) have the same version")
        }
        self.migrations = sorted
    }

    /// Applies the pending migrations on `connection` (outside any transaction) and returns the
    /// file names applied, in order. Each step is a transaction that first takes a
    /// transaction-level advisory lock, so migrators on other instances wait for it and then find
    /// the migration applied; no lock outlives its transaction, which matters behind a pooler in
    /// transaction mode (each transaction may run on another server connection, where a session
    /// lock could never be released).
    @discardableResult
    public func migrate(on connection: PostgresConnection) throws -> [String] {
        try connection.withTransaction { connection in
            try connection.execute("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))")
            try connection.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    version bigint PRIMARY KEY,
                    name text NOT NULL,
                    checksum text NOT NULL,
                    applied_at timestamptz NOT NULL DEFAULT now()
                )
                """)
        }
        var appliedNow: [String] = []
        for migration in migrations {
            let checksum = try connection.query(
                "SELECT encode(sha256(convert_to(\(migration.sql), 'UTF8')), 'hex')"
            )[0].decode(String.self, at: 0)
            let applied: Bool
            do {
                applied = try connection.withTransaction { connection in
                    try connection.execute("SELECT pg_advisory_xact_lock(\(Self.advisoryLockKey))")
                    let existing = try connection.query("SELECT name, checksum FROM schema_migrations WHERE version = \(migration.version)")
                    if let row = existing.first {
                        let (name, stored) = try row.decode((String, String).self)
                        guard stored == checksum else {
                            throw PostgresError(
                                code: .migrationChecksumMismatch,
                                context: "\(migration.fileName) was changed after it was applied (as \(name)); "
                                    + "add a new migration instead of editing an applied one")
                        }
                        return false
                    }
                    try connection.unsafeExecuteScript(migration.sql)
                    try connection.execute(
                        """
                        INSERT INTO schema_migrations (version, name, checksum)
                        VALUES (\(migration.version), \(migration.fileName), \(checksum))
                        """)
                    return true
                }
            } catch var error as PostgresError where error.code != .migrationChecksumMismatch {
                error.code = .migrationFailed
                error.context = "\(migration.fileName): \(error.context ?? "the server rejected it")"
                throw error
            }
            if applied { appliedNow.append(migration.fileName) }
        }
        return appliedNow
    }

    /// Applies pending migrations on a pooled connection.
    @discardableResult
    public func migrate(on pool: PostgresPool) throws -> [String] {
        try pool.withConnection { connection in
            // A migration may rewrite a large table: no client-side limit (the server's statement_timeout still holds).
            let timeout = connection.responseTimeout
            connection.responseTimeout = nil
            defer { connection.responseTimeout = timeout }
            return try migrate(on: connection)
        }
    }

    /// The file names not yet recorded as applied (for /readyz); does not take the lock.
    public func pendingMigrations(on connection: PostgresConnection) throws -> [String] {
        let exists = try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL")[0].decode(Bool.self, at: 0)
        guard exists else { return migrations.map(\.fileName) }
        var applied = Set<Int64>()
        for row in try connection.query("SELECT version FROM schema_migrations") {
            applied.insert(try row.decode(Int64.self, at: 0))
        }
        return migrations.filter { !applied.contains($0.version) }.map(\.fileName)
    }

    /// True when some migration has not been applied yet.
    public func hasPendingMigrations(on pool: PostgresPool) throws -> Bool {
        try !pool.withConnection { try pendingMigrations(on: $0) }.isEmpty
    }

    // MARK: - Files

    static func fileNames(in directory: String) throws -> [String] {
        guard let stream = opendir(directory) else {
            throw PostgresError(code: .migrationFailed, context: "cannot open \(directory): \(String(cString: strerror(errno)))")
        }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }

    static func readFile(_ path: String) throws -> String {
        do {
            return try FileReader.text(path)
        } catch {
            throw PostgresError(code: .migrationFailed, context: error.description)
        }
    }
}
