import FoundationEssentials
import Glibc
import Postgres
import PostgresCluster
import TestSupport
import Testing

/// A server that stops answering (its processes stopped with `SIGSTOP`) in the middle of a
/// statement or of a `COPY`: the connection gives up after its response timeout instead of
/// waiting for as long as the server is frozen.
@Suite(.testThreads, .serialized) struct ResponseTimeoutTests {
    @Test func aStatementAndACopyToAFrozenServerTimeOut() throws {
        let cluster = try LocalCluster.startTemporary()
        defer { cluster.stop() }
        var configuration = try cluster.configuration()
        configuration.responseTimeout = .seconds(1)
        let table = "frozen_copy"
        let setup = try PostgresConnection(configuration: configuration)
        try setup.execute("CREATE TABLE \(identifier: table) (id uuid, bytes bytea)")
        setup.close()

        // A COPY that the server stops reading halfway (its backend exists before the freeze).
        let copying = try PostgresConnection(configuration: configuration)
        let querying = try PostgresConnection(configuration: configuration)
        let pids = cluster.processIDs()
        try #require(pids.count > 1)
        var frozen = false
        defer { if frozen { pids.forEach { kill($0, SIGCONT) } } }

        let data = [UInt8](repeating: 7, count: 32 << 20)
        let start = ContinuousClock.now
        let error = #expect(throws: PostgresError.self) {
            try copying.copyIn("COPY frozen_copy (id, bytes) FROM STDIN (FORMAT binary)") { writer in
                pids.forEach { kill($0, SIGSTOP) }
                frozen = true
                writer.beginRow(fields: 2)
                writer.uuid(UUID())
                try data.withUnsafeBytes { try writer.bytes($0) }
            }
        }
        let elapsed = ContinuousClock.now - start
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(elapsed < .seconds(5), "the COPY gave up after \(elapsed)")
        #expect(!copying.isUsable)

        // A plain statement while it is frozen.
        let queryStart = ContinuousClock.now
        let queryError = #expect(throws: PostgresError.self) { try querying.query("SELECT 1") }
        #expect(queryError?.code == .timedOut)
        #expect(ContinuousClock.now - queryStart < .seconds(5))
        pids.forEach { kill($0, SIGCONT) }
        frozen = false
        // Thawed: a new connection works.
        let after = try PostgresConnection(configuration: configuration)
        #expect(try after.query("SELECT count(*) FROM frozen_copy")[0].decode(Int64.self, at: 0) == 0)
    }
}
