import Files
import Foundation
import Glibc
import Synchronization

/// A one-node Ceph cluster (a monitor, an OSD on memstore, a RADOS Gateway) that the tests start
/// themselves, the way they start PostgreSQL: once per test process, on first use, in a
/// directory of its own, stopped at exit. `ceph_cluster.sh` beside this file does the work;
/// Debian's `ceph-mon ceph-osd radosgw ceph-common` must be installed (`.ci/run` installs them).
///
/// The script waits on a socket whose other end only this process holds: when this process
/// exits, however it exits, the script's read returns and it stops the daemons and deletes the
/// directory.
public final class TestCeph: @unchecked Sendable {
    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("ceph_cluster.sh").path

    /// The cluster of this test process, started on first use.
    public static func shared() throws -> TestCeph { try started.get() }

    private static let started: Result<TestCeph, any Error> = Result {
        let ceph = try TestCeph()
        atexit { try? TestCeph.started.get().stop() }
        return ceph
    }

    /// The gateway's S3 endpoint: `http://127.0.0.1:PORT`, path-style.
    public let endpoint: String
    public let port: Int
    /// The gateway's https endpoint, `https://localhost:PORT`, whose certificate `TestCertificates`
    /// made (`tlsCAFile` to trust).
    public let tlsEndpoint: String
    public let tlsCAFile: String
    public let accessKeyID: String
    public let secretAccessKey: String
    /// The gateway's process, for tests that pause it (`SIGSTOP`) to play a store that hangs.
    public var gatewayPID: pid_t { gateway.withLock { $0.pid } }
    /// The gateway's process, and how many commands the script was sent (`killGateway`, `startGateway`).
    private let gateway: Mutex<(pid: pid_t, commands: Int)>
    public let directory: String
    /// How long the cluster took from nothing to a gateway that answers.
    public let startDuration: Duration
    private let scriptPID: pid_t
    private var controlEnd: Int32

    private init() throws {
        let start = ContinuousClock.now
        directory = try makeTemporaryDirectory("ceph")
        let ports = try (LoopbackSocket(), LoopbackSocket(), LoopbackSocket())
        ports.0.close()
        ports.1.close()
        ports.2.close()
        port = ports.1.port
        endpoint = "http://127.0.0.1:\(port)"
        let certificates = try TestCertificates.shared()
        tlsEndpoint = "https://localhost:\(ports.2.port)"
        tlsCAFile = certificates.caFile
        accessKeyID = "EXO" + String(UInt64.random(in: 0...UInt64.max), radix: 36).uppercased()
        secretAccessKey = (0..<4).map { _ in String(UInt64.random(in: 0...UInt64.max), radix: 36) }.joined()
        // The script deletes the whole directory when it stops, its log included.
        let cluster = directory
        let log = directory + "/script.log"
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw TestFailure("socketpair: errno \(errno)")
        }
        defer { Glibc.close(ends[0]) }
        controlEnd = ends[1]
        let script = try Self.spawn(
            [
                "/bin/sh", Self.script, cluster, String(ports.0.port), String(port), accessKeyID, secretAccessKey, String(ports.2.port),
                certificates.server.certificate, certificates.server.key,
            ], input: ends[0], output: log)
        scriptPID = script
        let gatewayPort = port
        do {
            try waitUntil(timeout: .seconds(180), pollingEvery: .milliseconds(100), "ceph_cluster.sh to write \(cluster)/ready") {
                var status: Int32 = 0
                if waitpid(script, &status, WNOHANG) == script {
                    throw TestFailure("ceph_cluster.sh exited (wait status \(status)) before the cluster was ready")
                }
                return FileManager.default.fileExists(atPath: cluster + "/ready")
            }
            let pids = try String(contentsOfFile: cluster + "/ready", encoding: .utf8).split(separator: " ")
            gateway = Mutex((pid_t(pids.first.flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0), 0))
            try waitUntil(timeout: .seconds(60), pollingEvery: .milliseconds(50), "the gateway to listen on \(gatewayPort)") {
                Self.accepts(gatewayPort)
            }
        } catch {
            Glibc.close(controlEnd)
            controlEnd = -1
            var status: Int32 = 0
            let deadline = ContinuousClock.now + .seconds(20)
            while waitpid(script, &status, WNOHANG) == 0, ContinuousClock.now < deadline { usleep(50_000) }
            let failure = TestFailure("\(error); the script's log:\n\(Self.tail(log))")
            try? FileManager.default.removeItem(atPath: directory)
            throw failure
        }
        startDuration = ContinuousClock.now - start
    }

    /// Stops the daemons and deletes the directory, waiting up to 20 s for the script to finish.
    public func stop() {
        guard controlEnd >= 0 else { return }
        Glibc.close(controlEnd)
        controlEnd = -1
        let deadline = ContinuousClock.now + .seconds(20)
        var status: Int32 = 0
        while waitpid(scriptPID, &status, WNOHANG) == 0, ContinuousClock.now < deadline { usleep(50_000) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Kills the gateway with SIGKILL, as a store that dies: connections are reset, new ones refused.
    /// Drills only: every test of the process shares the cluster.
    public func killGateway() throws { try control("kill-gateway") }

    /// Starts the gateway again after `killGateway`, and waits until it answers.
    public func startGateway() throws {
        try control("start-gateway")
        let port = port
        try waitUntil(timeout: .seconds(60), pollingEvery: .milliseconds(50), "the gateway to listen on \(port) again") { Self.accepts(port) }
    }

    /// Sends a command line to the script and waits until it wrote that it is done.
    private func control(_ command: String) throws {
        try gateway.withLock { gateway in
            let line = Array((command + "\n").utf8)
            guard controlEnd >= 0, Glibc.write(controlEnd, line, line.count) == line.count else {
                throw TestFailure("could not send \(command) to ceph_cluster.sh: errno \(errno)")
            }
            gateway.commands += 1
            let done = directory + "/gateway.\(gateway.commands)"
            try waitUntil(timeout: .seconds(60), pollingEvery: .milliseconds(20), "ceph_cluster.sh to do \(command)") {
                FileManager.default.fileExists(atPath: done)
            }
            gateway.pid = pid_t(try String(contentsOfFile: done, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        }
    }

    /// A bucket name no other test of this run uses (lower case, 3 to 63 characters).
    public func uniqueBucketName(_ prefix: String) -> String {
        "\(prefix)-\(getpid())-\(Self.counter.add(1, ordering: .relaxed).newValue)"
    }

    private static let counter = Atomic<Int>(0)

    /// Runs `s3_tool.py` (Python's boto3, Debian's python3-boto3) against this cluster with
    /// `arguments`; its standard output.
    @discardableResult
    public func boto3(_ arguments: [String]) throws -> String {
        try run("/usr/bin/python3", [Self.tool, "--endpoint", endpoint, "--access-key", accessKeyID, "--secret-key", secretAccessKey] + arguments)
    }

    public static let tool = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("s3_tool.py").path

    private static func accepts(_ port: Int) -> Bool {
        guard let fd = try? HTTPProbe.connect(port) else { return false }
        Glibc.close(fd)
        return true
    }

    private static func tail(_ path: String) -> String {
        String(((try? String(contentsOfFile: path, encoding: .utf8)) ?? "(no log)").suffix(4000))
    }

    /// posix_spawn with stdin from `input`, stdout and stderr to `output`, an empty signal mask and
    /// default dispositions (the test process may block SIGTERM, and a child inherits its mask).
    private static func spawn(_ arguments: [String], input: Int32, output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, input, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard result == 0 else { throw TestFailure("posix_spawn \(arguments[0]): \(String(cString: strerror(result)))") }
        return pid
    }
}

/// A plain TCP connect to 127.0.0.1, for readiness probes.
enum HTTPProbe {
    static func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            Glibc.close(fd)
            throw TestFailure("connect to \(port): errno \(errno)")
        }
        return fd
    }
}
