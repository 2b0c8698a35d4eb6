import FoundationEssentials
import Glibc
import Files
import Postgres
import Testing

/// A server that stops answering (its processes stopped with `SIGSTOP`) in the middle of a
/// statement or of a `COPY`: the connection gives up after its response timeout instead of
/// waiting for as long as the server is frozen.
@Suite(.serialized) struct ResponseTimeoutTests {
    /// The postmaster of `cluster` and every process it started.
    static func processes(of cluster: LocalCluster) throws -> [pid_t] {
        let pidFile = String(decoding: try FileReader.bytes(cluster.dataDirectory + "/postmaster.pid", limit: 4096), as: UTF8.self)
        let postmaster = try #require(pid_t(pidFile.split(separator: "\n")[0]))
        var pids = [postmaster]
        let proc = try #require(opendir("/proc"))
        defer { closedir(proc) }
        while let entry = readdir(proc) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
            guard let pid = pid_t(name), let stat = try? FileReader.bytes("/proc/\(name)/stat", limit: 4096) else { continue }
            let text = String(decoding: stat, as: UTF8.self)
            guard let close = text.lastIndex(of: ")") else { continue }
            let fields = text[text.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == postmaster { pids.append(pid) }
        }
        return pids
    }

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
        let pids = try Self.processes(of: cluster)
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
