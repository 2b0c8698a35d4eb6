import API
@testable import exosphere
import Glibc
import HTTP
import HTTPServer
import PostgresCluster
import SocketClient
import StructuredLogging
import Testing

/// `exosphere healthcheck` against real sockets: a closed port, bare servers answering 200 or
/// 503 or nothing, and a whole `Application`.
@Suite struct HealthcheckCommandTests {
    /// A bare HTTP server on a free loopback port whose `GET /healthz` answers `status`.
    static func server(status: HTTPStatus, host: String = "127.0.0.1") throws -> Server {
        var router = Router()
        router.get("/healthz", execution: .inline) { _, _ in
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

    /// A loopback port on which nothing listens until `release()`: a socket bound to it that never
    /// listens, so that no other process can bind it and start listening meanwhile (as could
    /// happen to a port found free and closed again). Connecting to it is refused, until a test
    /// calls `listen` on `fd` itself.
    struct ClosedPort {
        let fd: Int32
        let port: Int

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { throw HealthcheckFailure("socket: errno \(errno)") }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            guard bound else {
                let error = errno
                close(fd)
                throw HealthcheckFailure("bind: errno \(error)")
            }
            self.fd = fd
            port = Int(UInt16(bigEndian: address.sin_port))
        }

        func release() { close(fd) }
    }

    @Test func closedPortIsUnhealthy() throws {
        let closed = try ClosedPort()
        defer { closed.release() }
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
        let closed = try ClosedPort()
        defer { closed.release() }
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
        let silent = try ClosedPort()
        defer { silent.release() }
        try #require(listen(silent.fd, 8) == 0)
        let port = silent.port

        let start = ContinuousClock.now
        let result = Exosphere.healthStatus(host: "127.0.0.1", port: port, timeout: .milliseconds(300))
        let elapsed = ContinuousClock.now - start
        #expect(result.status == nil)
        #expect(elapsed >= .milliseconds(250) && elapsed < .seconds(2), "took \(elapsed)")
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
