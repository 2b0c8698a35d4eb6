import Foundation
import Postgres
import PostgresCluster
import TestSupport
import Testing

@Suite(.testThreads) struct LocalClusterTests {
    @Test func temporaryClusterIsRemovedOnStop() throws {
        let cluster = try LocalCluster.startTemporary()
        #expect(cluster.isTemporary && cluster.isRunning)
        #expect(cluster.socketDirectory.utf8.count + "/.s.PGSQL.5432".utf8.count <= 107)
        let connection = try PostgresConnection(connectionString: cluster.connectionString)
        #expect(try connection.query("SELECT current_database()")[0].decode(String.self, at: 0) == "exosphere")
        #expect(try connection.query("SELECT current_setting('fsync')")[0].decode(String.self, at: 0) == "off")
        connection.close()
        cluster.stop()
        #expect(!cluster.isRunning)
        #expect(!FileManager.default.fileExists(atPath: cluster.dataDirectory))
        cluster.stop()  // idempotent
    }

    @Test func persistentClusterKeepsItsDataAcrossStarts() throws {
        // Under /tmp and world-traversable, because as root the server runs as `postgres`.
        let base = NSTemporaryDirectory() + "/" + TestDatabase.uniqueName("exo-persistent")
        try FileManager.default.createDirectory(
            atPath: base, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: base) }
        var options = LocalCluster.Options()
        options.database = "app"
        let first = try LocalCluster.start(dataDirectory: base + "/pg", options: options)
        #expect(!first.isTemporary)
        try PostgresConnection(connectionString: first.connectionString).execute("CREATE TABLE kept (n int)")
        first.stop()
        #expect(FileManager.default.fileExists(atPath: base + "/pg/PG_VERSION"))

        let second = try LocalCluster.start(dataDirectory: base + "/pg", options: options)
        defer { second.stop() }
        let connection = try PostgresConnection(connectionString: second.connectionString)
        #expect(try connection.query("SELECT to_regclass('kept') IS NOT NULL")[0].decode(Bool.self, at: 0))
    }
}
