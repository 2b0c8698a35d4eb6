@testable import API
import Dispatch
import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

/// Two `exosphere serve` processes on one PostgreSQL, with haproxy in front: whatever one instance
/// did (sessions, password changes, throttle counters), the other knows (a revoked token within the
/// session cache's bound, 100 ms, `SessionCacheAPITests`; the rest at once), and losing one
/// instance costs only the requests it had in flight. Each test gets its own database of the
/// test cluster, its own two instances and its own haproxy.
@Suite(.testThreads, .drill, .serialized) struct MultiInstanceTests {
    /// The sign-in throttles of both instances: small, so that a few (slow, OWASP-cost) attempts reach them.
    static let emailLimit = 2
    static let addressLimit = 3

    @Test func aSessionFromOneInstanceWorksOnTheOther() throws {
        let deployment = try Deployment.start("sessions")
        defer { deployment.stop() }
        let (a, b, proxy) = (deployment.portA, deployment.portB, deployment.proxy.port)

        let email = uniqueEmail("sessions")
        let password = uniquePassword()
        let registered = try call(a, "POST", "/users", json: credentials(email, password))
        try #require(registered.status == 201, "register through A: \(registered.status) \(registered.text)")
        let first = try #require(registered.json["accessToken"]?.stringValue)
        let id = try #require(registered.json["user"]?["id"]?.stringValue)

        let onB = try call(b, "GET", "/users/me", token: first)
        #expect(onB.status == 200, "A's session on B: \(onB.status) \(onB.text)")
        #expect(onB.json["id"]?.stringValue == id)
        for _ in 0..<4 {  // round robin: both instances, twice
            let through = try call(proxy, "GET", "/users/me", token: first)
            #expect(through.status == 200, "A's session through haproxy: \(through.status) \(through.text)")
        }

        let signedIn = try call(b, "POST", "/users/signin", json: credentials(email, password))
        try #require(signedIn.status == 200, "sign-in through B: \(signedIn.status) \(signedIn.text)")
        let second = try #require(signedIn.json["accessToken"]?.stringValue)
        #expect(try call(a, "GET", "/users/me", token: second).status == 200, "B's session on A")
        let sessions = try call(a, "GET", "/users/me/sessions", token: second)
        #expect(sessions.status == 200)
        let listed = sessions.json["sessions"]?.arrayValue ?? []
        #expect(listed.count == 2, "A lists the sessions of both instances: \(sessions.text)")
        #expect(listed.filter { $0["current"]?.boolValue == true }.count == 1)

        // Signing out on A ends the session there at once, and on B within the bound.
        #expect(try call(a, "POST", "/users/signout", token: second, json: "{}").status == 204)
        let signedOut = ContinuousClock.now
        #expect(try call(a, "GET", "/users/me", token: second).status == 401, "a session signed out on A still works on A")
        try expectRefused(b, second, after: signedOut, "a session signed out on A")
        #expect(try call(b, "GET", "/users/me", token: first).status == 200, "the other session is untouched")
    }

    @Test func aPasswordChangeOnOneInstanceRevokesTheOldTokensOnTheOther() throws {
        let deployment = try Deployment.start("password")
        defer { deployment.stop() }
        let (a, b) = (deployment.portA, deployment.portB)

        let email = uniqueEmail("password")
        let oldPassword = uniquePassword()
        let newPassword = uniquePassword()
        let registered = try call(b, "POST", "/users", json: credentials(email, oldPassword))
        try #require(registered.status == 201, "register through B: \(registered.status) \(registered.text)")
        let first = try #require(registered.json["accessToken"]?.stringValue)
        let signedIn = try call(a, "POST", "/users/signin", json: credentials(email, oldPassword))
        try #require(signedIn.status == 200, "sign-in through A: \(signedIn.status) \(signedIn.text)")
        let other = try #require(signedIn.json["accessToken"]?.stringValue)
        // B has seen both tokens work: its session cache is warm.
        #expect(try call(b, "GET", "/users/me", token: first).status == 200)
        #expect(try call(b, "GET", "/users/me", token: other).status == 200)

        let changed = try call(
            a, "POST", "/users/me/password", token: first,
            json: #"{"oldPassword": \#(jsonString(oldPassword)), "newPassword": \#(jsonString(newPassword))}"#)
        try #require(changed.status == 200, "password change through A: \(changed.status) \(changed.text)")
        #expect(changed.json["revokedSessions"] == 1)
        let replacement = try #require(changed.json["accessToken"]?.stringValue)

        // At once on A; on B within the session cache's bound.
        let changedAt = ContinuousClock.now
        #expect(try call(a, "GET", "/users/me", token: other).status == 401, "the other session still works on A")
        try expectRefused(b, other, after: changedAt, "the other session, after a password change on A")
        try expectRefused(b, first, after: changedAt, "the replaced session")
        #expect(try call(b, "GET", "/users/me", token: other).code == "invalid_token")
        #expect(try call(b, "GET", "/users/me", token: replacement).status == 200, "the new session does not work on B")
        #expect(try call(b, "POST", "/users/signin", json: credentials(email, oldPassword)).status == 401, "the old password on B")
        #expect(try call(b, "POST", "/users/signin", json: credentials(email, newPassword)).status == 200, "the new password on B")
    }

    /// A stream opened through haproxy (on whichever instance it picked) gets what both instances
    /// do, in order, stays open past haproxy's 5 s server timeout on its heartbeats, and ends when
    /// its session is signed out on either instance.
    @Test func aStreamThroughHaproxyGetsWhatEitherInstanceDoes() throws {
        let deployment = try Deployment.start("events", options: ["--events-heartbeat", "1"])
        defer { deployment.stop() }
        let (a, b, proxy) = (deployment.portA, deployment.portB, deployment.proxy.port)
        let registered = try call(a, "POST", "/users", json: credentials(uniqueEmail("events"), uniquePassword()))
        try #require(registered.status == 201, "\(registered.status) \(registered.text)")
        let token = try #require(registered.json["accessToken"]?.stringValue)
        let stream = try EventStreamReader(port: proxy, token: token)
        defer { stream.close() }
        try #require(stream.status == 200)

        // Seven seconds of nothing but heartbeats: over haproxy's `timeout server 5s`.
        let opened = ContinuousClock.now
        while ContinuousClock.now - opened < .seconds(7) {
            let event = try stream.nextEventOrComment()
            #expect(event == nil, "no change was made: \(String(describing: event))")
        }
        #expect(stream.comments >= 5)

        // A change on A and an upload on B, one after the other: both come, in that order, within 1 s.
        let sent = ContinuousClock.now
        #expect(try call(a, "PATCH", "/users/me", token: token, json: #"{"firstname": "Both"}"#).status == 200)
        #expect(try ImagesProcessTests.upload(b, token, RealFiles.png3x2).status == 201)
        let events = try stream.next(2)
        let delay = ContinuousClock.now - sent
        #expect(events.map(\.name) == ["profile", "image_added"], "\(events)")
        #expect(delay < .seconds(1), "\(delay)")
        print("MultiInstanceTests: a PATCH on A and an upload on B reached a stream through haproxy in \(delay)")

        // Signed out on B: the stream says so and ends, through haproxy.
        #expect(try call(b, "POST", "/users/signout", token: token).status == 204)
        #expect(try stream.rest().map(\.name) == ["session_ended"])
    }

    @Test func theSignInThrottleIsSharedByBothInstances() throws {
        let deployment = try Deployment.start("throttle")
        defer { deployment.stop() }
        let (a, b, proxy) = (deployment.portA, deployment.portB, deployment.proxy.port)

        let email = uniqueEmail("throttle")
        let password = uniquePassword()
        try #require(try call(a, "POST", "/users", json: credentials(email, password)).status == 201)

        // Per email: one failure on A and one on B reach the limit of 2 on both. Each attempt comes
        // "through" another forwarded address, so that the per-address counters stay out of it.
        let wrong = credentials(email, "wrong-\(password)")
        #expect(try call(a, "POST", "/users/signin", json: wrong, forwardedFor: "198.51.100.1").status == 401)
        #expect(try call(b, "POST", "/users/signin", json: wrong, forwardedFor: "198.51.100.2").status == 401)
        for (name, port, address) in [("B", b, "198.51.100.3"), ("A", a, "198.51.100.4")] {
            let locked = try call(port, "POST", "/users/signin", json: credentials(email, password), forwardedFor: address)
            #expect(locked.status == 429, "the right password on \(name) after failures on A and B: \(locked.status) \(locked.text)")
            #expect(locked.code == "too_many_attempts")
            #expect(locked.header("Retry-After").flatMap { Int($0) }.map { $0 > 0 } == true)
        }

        // Per address, through haproxy (round robin over A and B): the client says it forwards for
        // 203.0.113.7, haproxy appends the client's address (127.0.0.1, a trusted proxy here too).
        for attempt in 1...Self.addressLimit {
            let failed = try call(
                proxy, "POST", "/users/signin", json: credentials(uniqueEmail("nobody"), password),
                forwardedFor: "203.0.113.7")
            #expect(failed.status == 401, "failure \(attempt) from 203.0.113.7: \(failed.status) \(failed.text)")
        }
        for (name, port) in [("haproxy", proxy), ("haproxy", proxy), ("A", a), ("B", b)] {
            let locked = try call(
                port, "POST", "/users/signin", json: credentials(uniqueEmail("nobody"), password),
                forwardedFor: "203.0.113.7")
            #expect(locked.status == 429, "203.0.113.7 through \(name) after \(Self.addressLimit) failures: \(locked.status)")
        }
        // Other clients behind the same haproxy are not lumped in with 203.0.113.7.
        let neighbour = try call(
            proxy, "POST", "/users/signin", json: credentials(uniqueEmail("nobody"), password),
            forwardedFor: "203.0.113.8")
        #expect(neighbour.status == 401, "another forwarded address is throttled too: \(neighbour.status)")
        let proxyItself = try call(proxy, "POST", "/users/signin", json: credentials(uniqueEmail("nobody"), password))
        #expect(proxyItself.status == 401, "a client without X-Forwarded-For is throttled: \(proxyItself.status)")

        // From a peer that is not a trusted proxy (127.0.0.2), X-Forwarded-For is ignored: the
        // locked 203.0.113.7 does not apply, the peer's own (fresh) counter does.
        let untrusted = try status(
            from: "127.0.0.2", port: a, method: "POST", target: "/users/signin",
            headers: [("X-Forwarded-For", "203.0.113.7"), ("Content-Type", "application/json")],
            body: credentials(uniqueEmail("nobody"), password))
        #expect(untrusted == 401, "X-Forwarded-For from an untrusted peer was believed: \(untrusted)")
    }

    /// haproxy's two frontends share the instances: `plain` retries only requests whose connection
    /// failed (its default), `retrying` also retries a GET whose connection died before an answer
    /// (`retry-on empty-response`). Through `plain` a kill costs the requests A held when it died:
    /// those in flight at the SIGKILL and those sent to it in the milliseconds it took to die (its
    /// listening socket accepts until the kernel closes it). Through `retrying` the same GETs are
    /// answered by B, which needs nothing from A.
    @Test func killingAnInstanceUnderLoadCostsAtMostItsRequestsInFlight() throws {
        let deployment = try Deployment.start("kill")
        defer { deployment.stop() }
        let (plain, retrying) = (deployment.proxy.port, deployment.retryingPort)

        let registered = try call(plain, "POST", "/users", json: credentials(uniqueEmail("kill"), uniquePassword()))
        try #require(registered.status == 201, "register through haproxy: \(registered.status) \(registered.text)")
        let token = try #require(registered.json["accessToken"]?.stringValue)

        // A bounded client loop: `connections` threads on each frontend, each one request per
        // connection (GET /users/me), until told to stop, or at most 2,000 requests or 40 s.
        let connections = 8
        let load = Load()
        let finished = DispatchSemaphore(value: 0)
        let began = ContinuousClock.now
        DispatchQueue.global().async {
            onThreads(2 * connections) { connection in
                let port = connection < connections ? plain : retrying
                var sent = 0
                while !load.stop.load(ordering: .relaxed), sent < 2_000, ContinuousClock.now - began < .seconds(40) {
                    let start = ContinuousClock.now
                    var failure: String?
                    do {
                        let reply = try HTTPClient.send(
                            port: port, method: "GET", target: "/users/me",
                            headers: [("Authorization", "Bearer \(token)")], body: nil)
                        if reply.status != 200 { failure = "status \(reply.status)" }
                    } catch {
                        failure = "\(error)"
                    }
                    load.record(Load.Sample(connection: connection, retrying: port == retrying, start: start, failure: failure))
                    sent += 1
                }
            }
            finished.signal()
        }
        var loadJoined = false
        defer { if !loadJoined { load.stop.store(true, ordering: .relaxed); finished.wait() } }

        // Let both instances serve for a while, then kill A without warning.
        try waitFor(seconds: 15, "requests before the kill") { load.count { _ in true } >= 600 }
        let killed = ContinuousClock.now
        deployment.a.signal(SIGKILL)
        while deployment.a.isRunning, ContinuousClock.now - killed < .seconds(10) { usleep(200) }
        try #require(!deployment.a.isRunning, "A did not die after SIGKILL")
        let dead = ContinuousClock.now
        // Keep going until haproxy has seen A's port refuse connections and its checks took A out.
        try waitFor(seconds: 15, "requests after the kill") {
            ContinuousClock.now - dead > .seconds(1.5) && load.count { $0.start > dead } >= 600
        }
        load.stop.store(true, ordering: .relaxed)
        finished.wait()
        loadJoined = true

        let samples = load.samples.withLock { $0 }
        let servedByA = deployment.a.stderr.components(separatedBy: "http.route=/users/me").count - 1
        print(
            "MultiInstanceTests: SIGKILL of 1 of 2 instances; A logged \(servedByA) GET /users/me before it died, "
                + "and took \(milliseconds(dead - killed)) ms to die")
        #expect(servedByA > 0, "A served nothing before it was killed: the kill proved nothing")
        for (name, isRetrying) in [("plain", false), ("retrying", true)] {
            let group = samples.filter { $0.retrying == isRetrying }
            let failures = group.filter { $0.failure != nil }
            let atKill = failures.filter { $0.start < killed }
            let afterDeath = group.filter { $0.start > dead }
            let perConnection = Dictionary(grouping: failures, by: \.connection).values.map(\.count).max() ?? 0
            print(
                """
                MultiInstanceTests: through \(name) (\(connections) connections): \(group.count) requests, \
                \(afterDeath.count) of them begun after A was dead; \(failures.count) failed (\(atKill.count) in flight at the \
                SIGKILL, \(failures.count - atKill.count) sent while A was dying; at most \(perConnection) per connection)\
                \(failures.isEmpty ? "" : ": " + Set(failures.compactMap(\.failure)).sorted().joined(separator: "; "))
                """)
            #expect(afterDeath.count >= 100, "\(name): too few requests after the kill to show anything")
            let failedAfter = afterDeath.filter { $0.failure != nil }
            #expect(
                failedAfter.isEmpty,
                "\(name): \(failedAfter.count) requests begun after A was dead failed: \(failedAfter.compactMap(\.failure).prefix(5))")
            #expect(
                atKill.count <= connections,
                "\(name): \(atKill.count) failures begun before the kill, more than the \(connections) connections could have in flight")
            if isRetrying {
                #expect(failures.count <= connections, "\(name): \(failures.count) failures for \(connections) connections")
            }
        }

        // Afterwards: haproxy serves everything from B.
        for index in 0..<20 {
            let reply = try call(index.isMultiple(of: 2) ? plain : retrying, "GET", "/users/me", token: token)
            #expect(reply.status == 200, "request \(index) through haproxy after the kill: \(reply.status) \(reply.text)")
        }
        #expect(try call(deployment.portB, "GET", "/users/me", token: token).status == 200)
    }

    // MARK: - The deployment

    /// Two instances of the built binary on a fresh database of the test cluster, and haproxy in front.
    final class Deployment {
        typealias Child = ExosphereProcessTests.Child
        let a: Child
        let b: Child
        /// haproxy; its port is the `plain` frontend's.
        let proxy: Child
        /// haproxy's `retrying` frontend.
        let retryingPort: Int
        /// The ports the instances chose (started with `--port 0`, so no other process can take them first).
        let portA: Int
        let portB: Int
        /// Holds haproxy's configuration; removed by `stop()`.
        let directory: String

        private init(a: Child, b: Child, portA: Int, portB: Int, proxy: Child, retryingPort: Int, directory: String) {
            self.a = a
            self.b = b
            self.portA = portA
            self.portB = portB
            self.proxy = proxy
            self.retryingPort = retryingPort
            self.directory = directory
        }

        /// Two instances on a fresh database of the test cluster, or on `databaseURL`; `options`
        /// go after the usual ones (a later flag wins).
        static func start(_ name: String, databaseURL: String? = nil, options: [String] = []) throws -> Deployment {
            // First, so that a machine without haproxy fails at once and says why.
            let haproxy = try #require(
                haproxyPath(),
                """
                haproxy is not installed (looked in PATH and /usr/sbin): the multi-instance tests need it \
                (apt-get install -y haproxy; .ci/run installs it)
                """)
            let binary = try #require(ExosphereProcessTests.executable(), "the exosphere binary was not found next to the tests")
            let databaseURL = try databaseURL ?? TestCluster.cluster().createDatabase("multi_\(name)_\(getpid())")
            var started: [Child] = []
            var directory: String?
            do {
                let arguments =
                    [
                        "serve", "--host", "127.0.0.1", "--port", "0", "--database-url", databaseURL,
                        "--trusted-proxies", "127.0.0.1",
                        "--signin-email-limit", String(emailLimit), "--signin-address-limit", String(addressLimit),
                        "--db-pool-size", "4", "--drain-timeout", "2", "--log-level", "info",
                    ] + options
                // Both at once: they race for the migrations, which an advisory lock serialises.
                let a = try Child(executable: binary.path, arguments: arguments, environment: ["LOG_FORMAT": "logfmt"], port: 0)
                started.append(a)
                let b = try Child(executable: binary.path, arguments: arguments, environment: ["LOG_FORMAT": "logfmt"], port: 0)
                started.append(b)
                let portA = try listeningPort(a)
                let portB = try listeningPort(b)

                directory = try makeTemporaryDirectory("exo-multi")
                let configPath = directory! + "/haproxy.cfg"
                var proxy: (Child, retryingPort: Int)?
                // Not `--port 0` here: haproxy does not report the ports it was given by the
                // kernel (no log line, no output), and the two frontends must be told apart. So
                // its ports are picked free beforehand (`freePort`): another process
                // may take one first, and then haproxy exits and is started again on others.
                for _ in 0..<3 {
                    let (port, retryingPort) = (try ExosphereProcessTests.freePort(), try ExosphereProcessTests.freePort())
                    let configuration = haproxyConfiguration(plainPort: port, retryingPort: retryingPort, servers: [portA, portB])
                    try Array(configuration.utf8).write(to: configPath)
                    let candidate = try Child(executable: haproxy, arguments: ["-f", configPath, "-db"], environment: [:], port: port)
                    started.append(candidate)
                    if try waitForHaproxy(candidate, ports: [port, retryingPort]) {
                        proxy = (candidate, retryingPort)
                        break
                    }
                    Deployment.terminate(candidate)
                }
                guard let proxy else { throw TestFailure("haproxy did not start: \(started.last?.stderr ?? "")") }
                return Deployment(
                    a: a, b: b, portA: portA, portB: portB, proxy: proxy.0, retryingPort: proxy.retryingPort,
                    directory: directory!)
            } catch {
                started.forEach(Deployment.terminate)
                if let directory { removeDirectory(directory) }
                throw error
            }
        }

        /// SIGTERM to every process still running, SIGKILL to any that outlives 5 s; then the temporary files.
        func stop() {
            [proxy, a, b].forEach(Deployment.terminate)
            Deployment.removeDirectory(directory)
        }

        static func terminate(_ child: Child) {
            guard child.isRunning else { return }
            child.signal(SIGTERM)
            if !child.waitForExit(timeout: 5) {
                child.signal(SIGKILL)
                _ = child.waitForExit(timeout: 5)
            }
        }

        static func removeDirectory(_ path: String) {
            unlink(path + "/haproxy.cfg")
            rmdir(path)
        }

        static func haproxyPath() -> String? {
            let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
            let directories = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/usr/local/sbin"]
            return directories.map { $0 + "/haproxy" }.first { access($0, X_OK) == 0 }
        }

        /// Round robin over the instances, checked every 200 ms (one failed check takes one out,
        /// one good check brings it back); a request whose connection fails is retried on the other.
        /// The `retrying` frontend also retries a GET whose server died before answering.
        static func haproxyConfiguration(plainPort: Int, retryingPort: Int, servers: [Int]) -> String {
            var lines = [
                "global",
                "    nbthread 1",
                "    maxconn 1000",
                "defaults",
                "    mode http",
                "    timeout connect 500ms",
                "    timeout client 10s",
                "    timeout server 5s",
                "    timeout check 2s",
                "    retries 3",
                "    option redispatch",
                "    option forwardfor",
                "frontend plain",
                "    bind 127.0.0.1:\(plainPort)",
                "    http-request disable-l7-retry",
                "    default_backend instances",
                "frontend retrying",
                "    bind 127.0.0.1:\(retryingPort)",
                "    default_backend instances",
                "backend instances",
                "    balance roundrobin",
                "    option httpchk GET /healthz",
                "    retry-on conn-failure empty-response",
                "    http-request disable-l7-retry unless METH_GET",
            ]
            for (index, server) in servers.enumerated() {
                lines.append("    server instance\(index) 127.0.0.1:\(server) check inter 200ms fall 1 rise 1")
            }
            return lines.joined(separator: "\n") + "\n"
        }

        /// The port an instance started with `--port 0` logged (`msg=listening … http.port=N`).
        static func listeningPort(_ child: Child) throws -> Int {
            try child.listeningPort(timeout: .seconds(60))
        }

        /// Whether haproxy answers `GET /healthz` on every port (false if it exited, e.g. a port was taken).
        static func waitForHaproxy(_ child: Child, ports: [Int]) throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                if ports.allSatisfy({ (try? httpGet(port: $0, path: "/healthz"))?.status == 200 }) { return true }
                if !child.isRunning { return false }
                usleep(20_000)
            }
            throw TestFailure("haproxy did not answer within 20 s: \(child.stderr)")
        }
    }
}

// MARK: - Helpers

/// What the client loop saw: when each request began and how it failed, if it did.
private final class Load: Sendable {
    struct Sample: Sendable {
        let connection: Int
        let retrying: Bool
        let start: ContinuousClock.Instant
        let failure: String?
    }

    let samples = Mutex<[Sample]>([])
    let stop = Atomic<Bool>(false)

    func record(_ sample: Sample) { samples.withLock { $0.append(sample) } }
    func count(where predicate: (Sample) -> Bool) -> Int { samples.withLock { $0.filter(predicate).count } }
}

private let counter = Atomic<Int>(0)

private func uniqueEmail(_ prefix: String) -> String {
    "\(prefix)-\(counter.add(1, ordering: .relaxed).newValue)-\(UInt32.random(in: 0...UInt32.max))@example.com"
}

private func uniquePassword() -> String { "pw-\(UInt64.random(in: 0...UInt64.max))-S3cret!" }

private func credentials(_ email: String, _ password: String) -> String {
    #"{"email": \#(jsonString(email)), "password": \#(jsonString(password))}"#
}

/// One request on a new connection; JSON bodies as `application/json`.
private func call(
    _ port: Int, _ method: String, _ target: String, token: String? = nil, json: String? = nil,
    forwardedFor: String? = nil
) throws -> Reply {
    var headers: [(String, String)] = []
    if let token { headers.append(("Authorization", "Bearer \(token)")) }
    if json != nil { headers.append(("Content-Type", "application/json")) }
    if let forwardedFor { headers.append(("X-Forwarded-For", forwardedFor)) }
    return try HTTPClient.send(port: port, method: method, target: target, headers: headers, body: json.map { Array($0.utf8) })
}

/// `GET /users/me` with `token` on `port` until refused (2 s at most): refused, and no request sent
/// more than the session cache's bound (100 ms) after `revoked` was answered 200.
private func expectRefused(
    _ port: Int, _ token: String, after revoked: ContinuousClock.Instant, _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let deadline = ContinuousClock.now + .seconds(2)
    var late = 0
    var status = 200
    while status == 200, ContinuousClock.now < deadline {
        let sent = ContinuousClock.now
        status = try call(port, "GET", "/users/me", token: token).status
        if status == 200, sent - revoked > .milliseconds(100) { late += 1 }
    }
    #expect(status == 401, "\(what) still works after 2 s", sourceLocation: sourceLocation)
    #expect(late == 0, "\(what) worked \(late) times more than 100 ms after", sourceLocation: sourceLocation)
}

private func milliseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
}

/// Polls `condition` every 10 ms; throws after `seconds`.
private func waitFor(seconds: Int, _ what: String, _ condition: () -> Bool) throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw TestFailure("timed out after \(seconds) s waiting for \(what)") }
        usleep(10_000)
    }
}

/// The status of one request sent from the loopback address `source`, i.e. from a peer that is not
/// 127.0.0.1 (HTTPClient always connects from 127.0.0.1).
private func status(
    from source: String, port: Int, method: String, target: String, headers: [(String, String)],
    body: String
) throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 30, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    func address(_ host: String, _ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        return address
    }
    var local = address(source, 0)
    var remote = address("127.0.0.1", port)
    let size = socklen_t(MemoryLayout<sockaddr_in>.size)
    guard withUnsafePointer(to: &local, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, size) } }) == 0 else {
        throw TestFailure("bind to \(source): errno \(errno)")
    }
    guard withUnsafePointer(to: &remote, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, size) } }) == 0 else {
        throw TestFailure("connect from \(source) to port \(port): errno \(errno)")
    }
    var request = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n"
    for (name, value) in headers { request += "\(name): \(value)\r\n" }
    let bytes = Array((request + "\r\n" + body).utf8)
    guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
        throw TestFailure("send: errno \(errno)")
    }
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while received.count < 12 {
        let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        received += chunk[..<count]
    }
    let head = String(decoding: received.prefix(12), as: UTF8.self)
    guard head.hasPrefix("HTTP/1.1 "), let code = Int(head.dropFirst(9).prefix(3)) else {
        throw TestFailure("not an HTTP response: \(head.debugDescription)")
    }
    return code
}

private extension Array where Element == UInt8 {
    /// Writes the bytes to a new file (or over an old one).
    func write(to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw TestFailure("open \(path): errno \(errno)") }
        defer { close(fd) }
        guard withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == count else { throw TestFailure("write \(path): errno \(errno)") }
    }
}
