import Foundation
import Glibc
import TestSupport
import Testing

/// `exosphere serve` under an open-file limit that clients can exhaust: started through
/// `prlimit`, with more connections opened than the limit allows.
@Suite(.testThreads, .drill, .serialized) struct DescriptorExhaustionTests {
    /// Starts `exosphere serve` with the open-file limit `soft:hard` on the test cluster.
    static func serve(_ name: String, nofile: String, loops: Int = 2, extra: [String]) throws -> ExosphereProcessTests.Child {
        let binary = try #require(ExosphereProcessTests.executable(), "the exosphere binary was not found next to the tests")
        let databaseURL = try TestCluster.cluster().createDatabase("fds_\(name)_\(getpid())")
        let arguments =
            [
                "--nofile=\(nofile)", "--", binary.path, "serve", "--host", "127.0.0.1", "--port", "0",
                "--database-url", databaseURL, "--db-pool-size", "2", "--event-loops", String(loops), "--log-level", "info",
                "--access-log", "off",
            ] + extra
        return try ExosphereProcessTests.Child(
            executable: "/usr/bin/prlimit", arguments: arguments,
            environment: ["LOG_FORMAT": "logfmt"], port: 0)
    }

    /// Opens `count` connections to `port` (each completed by the kernel into the listen backlog,
    /// accepted or not); their descriptors.
    static func connect(_ count: Int, port: Int) throws -> [Int32] {
        try (0..<count).map { _ in try HTTPClient.connect(port: port) }
    }

    /// User plus system CPU seconds the process has used.
    static func cpuSeconds(_ pid: pid_t) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name, which is in parentheses and may hold spaces.
        let fields = stat[stat.index(after: stat.lastIndex(of: ")")!)...].split(separator: " ")
        let ticks = Double(fields[11])! + Double(fields[12])!  // utime, stime (fields 14 and 15)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    @Test func maxConnectionsIsLoweredToTheOpenFileLimit() throws {
        // The soft limit is raised to the hard one (200), less the reserve (50, a quarter of it).
        // One loop: one listening socket, whose backlog is accepted in order, so that the held
        // connections are all in before the one over the cap.
        let child = try Self.serve("lowered", nofile: "100:200", loops: 1, extra: ["--descriptor-reserve", "500"])
        let port = try MultiInstanceTests.Deployment.listeningPort(child)
        #expect(child.stderr.contains("max connections lowered to fit the open-file limit"))
        #expect(child.stderr.contains("connections.max=150"))
        var held = try Self.connect(150, port: port)
        // Closed exactly once: this process also runs other suites' servers, whose sockets may
        // take a number again as soon as it is free, and a second close would close theirs.
        defer { held.forEach { close($0) } }
        // The next one is over the cap: a fast 503 and a close, not a hang.
        let refused = try HTTPClient.send(port: port, method: "GET", target: "/healthz", headers: [], body: nil)
        #expect(refused.status == 503)
        #expect(refused.code == "overloaded")
        held.forEach { close($0) }
        held = []
        var healthy = false
        for _ in 0..<100 where !healthy {
            healthy = (try? HTTPClient.send(port: port, method: "GET", target: "/healthz", headers: [], body: nil))?.status == 200
            if !healthy { usleep(20_000) }
        }
        #expect(healthy, "the server serves again once the connections are closed")
        child.signal(SIGTERM)
        #expect(child.waitForExit(timeout: 15))
    }

    @Test func runningOutOfDescriptorsNeitherSpinsNorFloodsTheLog() throws {
        // Soft and hard 128, no reserve: the cap (128) lies beyond what the process can open,
        // so the clients exhaust the descriptors themselves.
        let child = try Self.serve("exhausted", nofile: "128:128", extra: ["--descriptor-reserve", "0"])
        let port = try MultiInstanceTests.Deployment.listeningPort(child)
        let exhaustedSince = ContinuousClock.now
        var held = try Self.connect(300, port: port)
        defer { held.forEach { close($0) } }
        try waitUntil(timeout: .seconds(30), "the server to meet EMFILE") { child.stderr.contains("cannot accept connections") }
        let cpuBefore = try Self.cpuSeconds(child.pid)
        usleep(3_000_000)
        let cpu = try Self.cpuSeconds(child.pid) - cpuBefore
        #expect(cpu < 0.5, "the server used \(cpu) s of CPU in 3 s while out of descriptors")
        let lines = child.stderr.split(separator: "\n").filter { $0.contains("cannot accept connections") }
        // One line per 10 s (a loaded machine may stretch the 3.3 s this takes).
        let intervals = Int((ContinuousClock.now - exhaustedSince).components.seconds / 10) + 1
        #expect(lines.count >= 1 && lines.count <= intervals, "\(lines.count) log lines about it in \(intervals) intervals: \(lines.prefix(3))")
        #expect(lines.first?.contains("EMFILE") == true || lines.first?.contains("Too many open files") == true)
        // Freed descriptors are used again at once, backlog first.
        held.forEach { close($0) }
        held = []
        var healthy = false
        for _ in 0..<200 where !healthy {
            healthy = (try? HTTPClient.send(port: port, method: "GET", target: "/healthz", headers: [], body: nil))?.status == 200
            if !healthy { usleep(20_000) }
        }
        #expect(healthy, "the server serves again once descriptors are free")
        let metrics = try HTTPClient.send(port: port, method: "GET", target: "/metrics", headers: [], body: nil)
        let exhausted = metrics.text.split(separator: "\n").first { $0.hasPrefix("exosphere_http_accept_exhausted_total ") }
        #expect(exhausted.flatMap { Int($0.split(separator: " ")[1]) }.map { $0 >= 1 && $0 < 100 } == true, "\(exhausted ?? "none")")
        child.signal(SIGTERM)
        #expect(child.waitForExit(timeout: 15))
    }
}
