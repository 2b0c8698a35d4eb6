import Files
import Migrations
import Postgres
import TestSupport
import Testing

/// The migrations compiled into the binary are the repository's `migrations/`, byte for byte:
/// a database migrated by one is never refused by the other (checksums match).
@Suite(.testThreads) struct EmbeddedMigrationsTests {
    @Test func theBuiltInMigrationsAreTheDirectorysFiles() throws {
        let directory = try Migrator(directory: TestServer.repositoryRoot + "/migrations")
        let embedded = try Migrator(files: EmbeddedMigrations.files)
        #expect(embedded.migrations.map(\.fileName) == directory.migrations.map(\.fileName))
        #expect(embedded.migrations == directory.migrations)
        #expect(embedded.migrations.count >= 3)
        // Line endings, trailing newlines and backslashes survive the round trip through a literal.
        let file = try FileReader.bytes(TestServer.repositoryRoot + "/migrations/" + embedded.migrations[0].fileName, limit: 1 << 20)
        #expect(Array(embedded.migrations[0].sql.utf8) == file)
    }
}
