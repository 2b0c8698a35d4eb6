import API
@testable import exosphere
import Glibc
import HTTP
import HTTPServer
import PostgresCluster
import SocketClient
import StructuredLogging
import TestSupport
import Testing

/// `exosphere healthcheck` against real sockets: a closed port, bare servers answering 200 or
/// 503 or nothing, and a whole `Application`.
@Suite(.testThreads) struct HealthcheckCommandTests {
    /// A bare HTTP server on a free loopback port whose `GET /healthz` answers `status`.
    static func server(status: HTTPStatus, host: String = "127.0.0.1") throws -> Server {
        var router = Router()
        router.get("/healthz", execution: .loop) { _, _ in
            Response(status: status, contentType: "application/json", body: Array(#"{"status":"ok"}"#.utf8))
        }
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = 0
        configuration.eventLoops = 1
        configuration.workerThreads = 1
        configuration.accessLog = false
        configuration.drainTimeout = .seconds(1)
        let server = Server(configuration: configuration, router: router, logger: Logger(label: "healthcheck-tests", level: .critical))
        try server.start()
        return server
    }

    @Test func closedPortIsUnhealthy() throws {
        let closed = try LoopbackSocket()  // bound, never listening: refused
        defer { closed.close() }
        #expect(Exosphere.main(arguments: ["healthcheck", "--port", String(closed.port)], environment: [:]) == 1)
    }

    @Test func okIsHealthy() throws {
        let server = try Self.server(status: .ok)
        defer { server.shutdown() }
        #expect(Exosphere.main(arguments: ["healthcheck", "--port", String(server.port)], environment: [:]) == 0)
        #expect(Exosphere.main(arguments: ["healthcheck", "--port=\(server.port)", "--host=127.0.0.1"], environment: [:]) == 0)
    }

    @Test func readsPortAndHostLikeServe() throws {
        let server = try Self.server(status: .ok)
        defer { server.shutdown() }
        let closed = try LoopbackSocket()  // bound, never listening: refused
        defer { closed.close() }
        #expect(Exosphere.main(arguments: ["healthcheck"], environment: ["PORT": String(server.port), "HOST": "127.0.0.1"]) == 0)
        // A flag wins over its variable.
        #expect(Exosphere.main(arguments: ["healthcheck", "--port", String(server.port)], environment: ["PORT": String(closed.port)]) == 0)
        #expect(Exosphere.main(arguments: ["healthcheck", "--port", String(closed.port)], environment: ["PORT": String(server.port)]) == 1)
        // Serve's other settings are not its business, even when invalid.
        #expect(Exosphere.main(arguments: ["healthcheck"], environment: ["PORT": String(server.port), "LOG_LEVEL": "loud"]) == 0)
    }

    @Test func wildcardHostIsProbedOnLoopback() throws {
        // In the container HOST=0.0.0.0 is where serve listens; the probe goes to 127.0.0.1.
        let server = try Self.server(status: .ok, host: "0.0.0.0")
        defer { server.shutdown() }
        #expect(Exosphere.main(arguments: ["healthcheck"], environment: ["PORT": String(server.port), "HOST": "0.0.0.0"]) == 0)
    }

    @Test func otherStatusIsUnhealthy() throws {
        let server = try Self.server(status: .serviceUnavailable)
        defer { server.shutdown() }
        #expect(Exosphere.main(arguments: ["healthcheck", "--port", String(server.port)], environment: [:]) == 1)
        #expect(Exosphere.healthStatus(host: "127.0.0.1", port: server.port, timeout: .seconds(2)).status == 503)
    }

    @Test func silentServerTimesOut() throws {
        // A listening socket that never accepts: connect succeeds through the backlog, no answer comes.
        let silent = try SilentListener(backlog: 8)
        defer { silent.close() }
        let port = silent.port

        // It gives up on its own, while the server is still silent: a watchdog hangs up after
        // 30 s, and a probe that waited for that has been reset, not timed out.
        let start = ContinuousClock.now
        let (result, onItsOwn) = silent.whileSilent { Exosphere.healthStatus(host: "127.0.0.1", port: port, timeout: .milliseconds(300)) }
        let elapsed = ContinuousClock.now - start
        #expect(result.status == nil)
        let failure: HTTPClientError? = if case .failure(let error) = result { error } else { nil }
        #expect(failure?.errno == EAGAIN || failure?.errno == EWOULDBLOCK, "not a timeout: \(String(describing: failure))")
        #expect(elapsed >= .milliseconds(250), "gave up after \(elapsed), before its timeout")
        #expect(onItsOwn, "the probe was still waiting when the watchdog hung up, after \(elapsed)")
        #expect(Exosphere.healthcheck(["--port", String(port)], environment: [:], timeout: .milliseconds(200)) == 1)
    }

    @Test(arguments: [["--bogus"], ["--port"], ["--port", "abc"], ["--port", "0"], ["--database-url", "x"], ["8080"]])
    func usageErrorsAreUnhealthyNotReserved(_ arguments: [String]) {
        // Docker reserves exit status 2: every failure is 1.
        #expect(Exosphere.main(arguments: ["healthcheck"] + arguments, environment: [:]) == 1)
    }

    @Test func runningApplicationIsHealthy() throws {
        let cluster = try LocalCluster.startTemporary()
        var configuration = Configuration()
        configuration.databaseURL = cluster.connectionString
        configuration.server.port = 0
        configuration.server.accessLog = false
        let application = try Application(configuration: configuration, logger: .silent)
        let port = application.server.port
        #expect(Exosphere.main(arguments: ["healthcheck", "--port", String(port)], environment: [:]) == 0)
        application.shutdown()
        // The port is closed now; another process could bind it in the meantime (unlikely: the
        // kernel hands out ephemeral ports in turn), which is the price of checking this server.
        #expect(Exosphere.main(arguments: ["healthcheck", "--port", String(port)], environment: [:]) == 1)
    }
}

extension Result<Int, HTTPClientError> {
    fileprivate var status: Int? { try? get() }
}

struct HealthcheckFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
