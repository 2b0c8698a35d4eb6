import API
import Files
import Glibc
import JSON
import Lifecycle
import Postgres
import PostgresCluster
import StructuredLogging
import TestSupport
import Synchronization
import Testing

/// The application's services start in order and stop in reverse, on shutdown and on a failed
/// start alike: a start that fails part-way leaves nothing of what it started running.
@Suite(.testThreads)
struct ServiceLifecycleTests {
    /// The services a log names in its "service started" and "service stopped" lines, in order.
    private static func services(in path: String) throws -> (started: [String], stopped: [String]) {
        var started: [String] = []
        var stopped: [String] = []
        for line in try FileReader.text(path).split(separator: "\n") {
            let entry = try JSONParser.parse(Array(line.utf8))
            guard let name = entry["service"]?.stringValue else { continue }
            switch entry["msg"]?.stringValue {
            case "service started": started.append(name)
            case "service stopped": stopped.append(name)
            default: break
            }
        }
        return (started, stopped)
    }

    /// The connections to `database` that PostgreSQL has open.
    private static func connections(to database: String, cluster: LocalCluster) throws -> Int64 {
        let connection = try PostgresConnection(
            configuration: try PostgresConfiguration(connectionString: cluster.connectionString(database: "postgres")))
        defer { connection.close() }
        var binds = PostgresBindings()
        binds.append(database)
        return try connection.query(PostgresStatement(unsafeSQL: "SELECT count(*) FROM pg_stat_activity WHERE datname = $1"), binds)[0].decode(
            Int64.self, at: 0)
    }

    /// The images service cannot start (its directory would be under a file): every service that
    /// started before it stops, the last first, and the database keeps no connection of it.
    @Test func aFailedStartStopsEveryServiceThatStartedBeforeIt() throws {
        let cluster = try TestCluster.cluster()
        let name = "api_failedstart_\(getpid())"
        var configuration = TestServer.configuration("failedstart", databaseURL: try cluster.createDatabase(name))
        configuration.images.storage = .filesystem
        configuration.images.directory = "/dev/null/images"
        let logPath = "/tmp/exo-apitests-failedstart-\(getpid()).log"
        let logFD = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600)
        try #require(logFD >= 0)
        defer { close(logFD) }
        #expect(throws: (any Error).self) {
            _ = try Application(configuration: configuration, logger: Logger(label: "failedstart", level: .debug, fd: logFD))
        }
        let (started, stopped) = try Self.services(in: logPath)
        #expect(started == ["database", "mail", "hashing", "accounts", "thumbnailer"])
        #expect(stopped == started.reversed())
        // The pools closed their connections (a backend ends a moment after its client leaves).
        try waitUntil(timeout: .seconds(30), "the failed start's connections to end") {
            try Self.connections(to: name, cluster: cluster) == 0
        }
    }

    /// A running application stops every service it started, the last first.
    @Test func shutdownStopsEveryServiceInReverse() throws {
        let server = try TestServer("lifecycle")
        let running = server.app.services.names
        #expect(running.first == "database")
        #expect(running.suffix(2) == ["http", "memory-trim"])
        server.shutdown()
        #expect(server.app.services.names.isEmpty)
        let (started, stopped) = try Self.services(in: server.logPath)
        #expect(started == running)
        #expect(stopped == running.reversed())
    }

    /// The group alone: reverse order, and a start that throws is not noted.
    @Test func aGroupStopsInReverseAndNotesOnlyWhatStarted() throws {
        let stops = StopLog()
        let group = ServiceGroup()
        try group.start("a", {}, stop: { stops.append("a") })
        group.started("b") { stops.append("b") }
        struct Failure: Error {}
        #expect(throws: Failure.self) { try group.start("c", { throw Failure() }, stop: { stops.append("c") }) }
        #expect(group.names == ["a", "b"])
        group.shutdown()
        #expect(stops.names == ["b", "a"])
        group.shutdown()
        #expect(stops.names == ["b", "a"])
    }
}

/// What the services of a test group stopped, in order.
private final class StopLog: Sendable {
    private let stopped = Mutex<[String]>([])
    func append(_ name: String) { stopped.withLock { $0.append(name) } }
    var names: [String] { stopped.withLock { $0 } }
}
