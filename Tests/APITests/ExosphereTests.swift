import Foundation
import Glibc
import TestSupport
import Testing

/// The built `exosphere` binary as a subprocess: real flags, a real socket, a real SIGTERM.
@Suite(.testThreads, .drill) struct ExosphereProcessTests {
    /// The executable built next to the test bundle.
    static func executable() -> URL? { TestImages.exosphereExecutable().map { URL(fileURLWithPath: $0) } }

    /// A port that was free a moment ago, for a program that must be told its port (haproxy,
    /// Patroni, etcd, pgbouncer, a relay that comes up later).
    ///
    /// Racy by nature: someone may bind it before the program does. Below the kernel's ephemeral
    /// range (`ip_local_port_range`, 32768–60999 here), which every `--port 0` listener and every
    /// outgoing connection of the suite draws from, only another caller of this function can take
    /// it: a port from `bind(0)` was taken by a client connection before Patroni bound it, in a
    /// loaded run. So a random port of 20000–32767 that binds now. `exosphere serve` is started
    /// with `--port 0` and logs the port it got (`listeningPort`) instead; a test that needs a
    /// port nobody listens on holds one with a `LoopbackSocket` that does not listen.
    static func freePort() throws -> Int {
        for _ in 0..<200 {
            guard let socket = try? LoopbackSocket(port: Int.random(in: 20_000...32_767)) else { continue }
            socket.close()
            return socket.port
        }
        throw TestFailure("no free port in 20000–32767 after 200 tries")
    }

    /// A child process started with `posix_spawn`, with a clean signal mask and default dispositions.
    ///
    /// Not Foundation's `Process`: it passes on the spawning thread's signal mask, and the test runner's
    /// threads block SIGTERM, which would hide exactly the signal handling these tests are about.
    final class Child {
        let pid: pid_t
        /// The port given at the start, or the one the process logged (`listeningPort()`).
        private(set) var port: Int
        let log: String
        /// Where standard output goes.
        let outputLog: String
        /// The managed PostgreSQL of this child (`EXOSPHERE_DATA_DIR`), removed with it.
        let dataDirectory: String
        private var status: Int32?

        /// `standardInput` is what the process reads (nothing: `/dev/null`). A caller's
        /// `EXOSPHERE_DATA_DIR` is kept (another child's cluster); without one it is this child's own.
        init(executable: String, arguments: [String], environment: [String: String], port: Int, standardInput: String? = nil) throws {
            self.port = port
            let name = FileManager.default.temporaryDirectory.appendingPathComponent("exosphere-\(UUID().uuidString)").path
            log = name + ".log"
            outputLog = name + ".out"
            dataDirectory = name
            var environment = environment
            environment["EXOSPHERE_DATA_DIR"] = environment["EXOSPHERE_DATA_DIR"] ?? dataDirectory + "/pg"
            // The dev mailbox of a child without a relay: its own, not the working directory's.
            environment["EXOSPHERE_MAIL_DIR"] = environment["EXOSPHERE_MAIL_DIR"] ?? dataDirectory + "/mail"
            environment["PATH"] = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            let input = name + ".in"
            try (standardInput ?? "").write(toFile: input, atomically: false, encoding: .utf8)
            defer { unlink(input) }
            posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, outputLog, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_addopen(&actions, 2, log, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            var empty = sigset_t()
            sigemptyset(&empty)
            posix_spawnattr_setsigmask(&attributes, &empty)
            var defaults = sigset_t()
            sigemptyset(&defaults)
            for signal in [SIGTERM, SIGINT, SIGPIPE] { sigaddset(&defaults, signal) }
            posix_spawnattr_setsigdefault(&attributes, &defaults)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
            let argv = ([executable] + arguments).map { strdup($0) } + [nil]
            let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { (argv + envp).forEach { free($0) } }
            var pid: pid_t = 0
            let result = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
            guard result == 0 else { throw TestFailure("posix_spawn: \(String(cString: strerror(result)))") }
            self.pid = pid
        }

        deinit {
            if isRunning {
                kill(pid, SIGKILL)
                _ = waitForExit(timeout: 5)
            }
            unlink(log)
            unlink(outputLog)
            try? FileManager.default.removeItem(atPath: dataDirectory)
        }

        var stderr: String { (try? String(contentsOfFile: log, encoding: .utf8)) ?? "" }
        var stdout: String { (try? String(contentsOfFile: outputLog, encoding: .utf8)) ?? "" }

        var isRunning: Bool {
            if status != nil { return false }
            var raw: Int32 = 0
            if waitpid(pid, &raw, WNOHANG) == pid { status = raw }
            return status == nil
        }

        /// The exit code, if the process exited (rather than being killed by a signal).
        var exitCode: Int32? { status.flatMap { $0 & 0x7F == 0 ? ($0 >> 8) & 0xFF : nil } }
        /// The signal that killed the process, if one did.
        var killedBy: Int32? { status.flatMap { $0 & 0x7F != 0 ? $0 & 0x7F : nil } }

        /// Waits for the process to end; false if it is still running after `timeout` seconds.
        func waitForExit(timeout: Double) -> Bool {
            let deadline = Date().addingTimeInterval(timeout)
            while isRunning {
                if Date() > deadline { return false }
                usleep(10_000)
            }
            return true
        }

        func signal(_ signal: Int32) { kill(pid, signal) }

        /// The port an `exosphere serve` started with `--port 0` logged once it was listening
        /// (`msg=listening … http.port=N`, logfmt, at notice level); also becomes `port`. Throws if
        /// the process exits first or logs nothing of the kind within `timeout`.
        func listeningPort(timeout: Duration = .seconds(60)) throws -> Int {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                let log = stderr
                if let line = log.components(separatedBy: "\n").first(where: { $0.contains("msg=listening") }),
                    let field = line.split(separator: " ").first(where: { $0.hasPrefix("http.port=") }),
                    let port = Int(field.dropFirst("http.port=".count)), port > 0
                {
                    self.port = port
                    return port
                }
                guard isRunning else { throw TestFailure("exosphere exited at start: \(log)") }
                usleep(20_000)
            }
            throw TestFailure("exosphere did not start listening within \(timeout): \(stderr)")
        }
    }

    static func run(_ arguments: [String]) throws -> Child {
        let binary = try #require(executable(), "exosphere binary not found next to \(Bundle.main.bundleURL.path)")
        return try Child(executable: binary.path, arguments: arguments, environment: [:], port: 0)
    }

    /// Starts `exosphere serve` on a port of its own choosing (`--port 0`: no other process can
    /// take it first) and waits until it accepts connections.
    static func serve(_ extra: [String] = [], environment: [String: String] = [:]) throws -> Child {
        let binary = try #require(executable(), "exosphere binary not found next to \(Bundle.main.bundleURL.path)")
        let child = try Child(
            executable: binary.path,
            arguments: [
                "serve", "--host", "127.0.0.1", "--port", "0", "--drain-timeout", "2",
                "--log-level", "notice",
                // As the test servers': four tests at once on two cores are no outage, and a
                // production-cost hash waiting for a core has taken over the 4 s default (a
                // registration answered 503 in RecoveryAPITests under the whole suite).
                "--request-timeout", "60",
            ] + extra,
            environment: environment.merging(["LOG_FORMAT": "logfmt"]) { own, _ in own }, port: 0)
        // The first start of a managed cluster runs initdb: allow for a loaded machine.
        let port = try child.listeningPort(timeout: .seconds(60))
        let deadline = Date().addingTimeInterval(60)
        while (try? httpGet(port: port, path: "/healthz")) == nil {
            guard child.isRunning, Date() < deadline else {
                throw TestFailure("exosphere did not start listening: \(child.stderr)")
            }
            usleep(20_000)
        }
        return child
    }

    @Test func servesHealthzAndExitsCleanlyOnSIGTERM() throws {
        let child = try Self.serve()
        let health = try httpGet(port: child.port, path: "/healthz")
        #expect(health.status == 200)
        #expect(health.body == #"{"status":"ok"}"#)
        #expect(health.head.lowercased().contains("content-type: application/json"))
        #expect(try httpGet(port: child.port, path: "/nope").status == 404)

        child.signal(SIGTERM)
        #expect(child.waitForExit(timeout: 10), "exosphere still running 10 s after SIGTERM (drain timeout 2 s)")
        #expect(child.killedBy == nil, "killed by signal \(child.killedBy ?? 0); stderr: \(child.stderr)")
        #expect(child.exitCode == 0)
        #expect(child.stderr.contains("msg=stopped"))
    }

    /// The binary carries its migrations: started from another directory, with none beside it,
    /// it migrates a fresh database and serves.
    @Test func servesFromAnyWorkingDirectoryWithItsBuiltInMigrations() throws {
        let binary = try #require(Self.executable(), "exosphere binary not found")
        let child = try Child(
            executable: "/usr/bin/env",
            arguments: [
                "-C", "/", binary.path, "serve", "--host", "127.0.0.1", "--port", "0",
                "--drain-timeout", "2",
            ],
            environment: ["LOG_FORMAT": "logfmt"], port: 0)
        let port = try child.listeningPort(timeout: .seconds(60))
        var ready: (status: Int, head: String, body: String)?
        let deadline = Date().addingTimeInterval(60)
        while ready?.status != 200, child.isRunning, Date() < deadline {
            ready = try? httpGet(port: port, path: "/readyz")
            if ready?.status != 200 { usleep(50_000) }
        }
        #expect(ready?.status == 200, Comment(rawValue: child.stderr))
        let migrations = try FileManager.default.contentsOfDirectory(atPath: TestServer.repositoryRoot + "/migrations").filter {
            $0.hasSuffix(".sql")
        }
        #expect(child.stderr.contains("migrations.applied=\(migrations.count)"), Comment(rawValue: child.stderr))
        child.signal(SIGTERM)
        #expect(child.waitForExit(timeout: 10))
        #expect(child.exitCode == 0)
    }

    @Test func exitsCleanlyOnSIGINT() throws {
        let child = try Self.serve()
        child.signal(SIGINT)
        #expect(child.waitForExit(timeout: 10))
        #expect(child.killedBy == nil)
        #expect(child.exitCode == 0)
    }

    @Test func secondSignalDuringDrainDoesNotKillTheProcess() throws {
        let child = try Self.serve()
        // A rejected request leaves its connection lingering (2 s) while this client keeps it open,
        // so the drain takes a while: long enough to send another signal in the middle of it.
        let fd = try HTTPClient.connect(port: child.port)
        defer { close(fd) }
        _ = "garbage\r\n\r\n".withCString { send(fd, $0, 11, Int32(MSG_NOSIGNAL)) }
        var byte: UInt8 = 0
        try #require(recv(fd, &byte, 1, 0) == 1)  // the 400 has been written: the connection lingers

        child.signal(SIGTERM)
        // The drain has begun (not merely the signal sent) before the second signal comes.
        try waitUntil(timeout: .seconds(10), "exosphere to log the start of its drain") {
            child.stderr.contains("msg=\"shutting down\"") || !child.isRunning
        }
        #expect(child.isRunning, "exosphere did not wait for the lingering connection")
        child.signal(SIGTERM)
        #expect(child.waitForExit(timeout: 5))
        #expect(child.killedBy == nil, "killed by signal \(child.killedBy ?? 0) in the middle of the drain")
        #expect(child.exitCode == 0)
    }

    @Test(
        arguments: [
            (["serve", "--port", "nope"], 2), (["frobnicate"], 2), (["--version"], 0),
            (["serve", "--host", "not an address", "--port", "0"], 1),
        ] as [([String], Int32)])
    func exitStatus(_ arguments: [String], _ status: Int32) throws {
        let child = try Self.run(arguments)
        #expect(child.waitForExit(timeout: 60))
        #expect(child.exitCode == status)
    }
}
