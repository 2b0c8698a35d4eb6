import API
import Files
import FoundationEssentials
import Foundation
import Glibc
import Postgres
import Synchronization
import TestSupport
import Testing

/// A pgbouncer (Debian's, 1.18) in front of the test cluster, in one pool mode, on a port of its
/// own. As root it runs as the cluster's system user (pgbouncer refuses root).
final class TestPgBouncer: Sendable {
    let directory: String
    let port: Int
    /// The connection string of `database` through this pgbouncer.
    let url: String
    private let process: Process

    /// `settings` are more `[pgbouncer]` lines (`name = value`).
    init(direct: String, mode: String, poolSize: Int, settings: [String] = []) throws {
        func value(_ key: String) throws -> String {
            guard let match = direct.firstMatch(of: try Regex("\(key)='?([^' ]+)'?")) else { throw TestFailure("no \(key) in \(direct)") }
            return String(match.output[1].substring ?? "")
        }
        let (host, postgresPort, user, database) = (try value("host"), try value("port"), try value("user"), try value("dbname"))
        directory = try FileSystem.createTemporaryDirectory(prefix: "pgbouncer")
        port = try ExosphereProcessTests.freePort()
        url = "host=127.0.0.1 port=\(port) user=\(user) dbname=\(database)"
        let configuration = """
            [databases]
            * = host=\(host) port=\(postgresPort)
            [pgbouncer]
            listen_addr = 127.0.0.1
            listen_port = \(port)
            unix_socket_dir =
            auth_type = trust
            auth_file = \(directory)/users.txt
            pool_mode = \(mode)
            default_pool_size = \(poolSize)
            max_client_conn = 500
            logfile = \(directory)/pgbouncer.log
            pidfile = \(directory)/pgbouncer.pid
            """ + settings.map { "\n" + $0 }.joined()
        try Data(configuration.utf8).write(to: URL(fileURLWithPath: directory + "/pgbouncer.ini"))
        try Data("\"\(user)\" \"\"\n".utf8).write(to: URL(fileURLWithPath: directory + "/users.txt"))
        process = Process()
        if geteuid() == 0 {
            guard let account = getpwnam("postgres") else { throw TestFailure("no postgres system user to run pgbouncer as") }
            chown(directory, account.pointee.pw_uid, account.pointee.pw_gid)
            for name in ["pgbouncer.ini", "users.txt"] { chown(directory + "/" + name, account.pointee.pw_uid, account.pointee.pw_gid) }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = [
                "--reuid=\(account.pointee.pw_uid)", "--regid=\(account.pointee.pw_gid)", "--clear-groups", "/usr/sbin/pgbouncer",
                directory + "/pgbouncer.ini",
            ]
        } else {
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/pgbouncer")
            process.arguments = [directory + "/pgbouncer.ini"]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try waitUntil(timeout: .seconds(10), "pgbouncer to listen on \(port)") { isListening(port) }
    }

    /// What pgbouncer logged (its refusals name the cause).
    var log: String { (try? String(contentsOfFile: directory + "/pgbouncer.log", encoding: .utf8)) ?? "" }

    func stop() {
        // Immediate shutdown: the clients are gone. (Foundation's `terminate` left it running here.)
        kill(process.processIdentifier, SIGKILL)
        try? waitUntil(timeout: .seconds(10), "pgbouncer to exit") { !self.process.isRunning }
        try? FileManager.default.removeItem(atPath: "/tmp/pgbouncer-last.log")
        try? FileManager.default.copyItem(atPath: directory + "/pgbouncer.log", toPath: "/tmp/pgbouncer-last.log")
        try? FileManager.default.removeItem(atPath: directory)
    }
}

func isListening(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

/// Exosphere behind pgbouncer: session and transaction mode carry a mixed load without one error
/// (statements, transactions, the event loops' pipelines, migrations, housekeeping), and statement
/// mode is refused at start with the reason.
@Suite(.testThreads, .drill, .serialized)
struct PoolerTests {
    /// 16 clients, each its own user, mixing `GET` and conditional `PATCH /users/me` (pipelined on
    /// the event loops in session mode), sign-ins (transactions) and uploads, through pgbouncer
    /// with fewer server connections than clients in transaction mode.
    @Test(arguments: [PostgresConfiguration.Pooler.session, .transaction])
    func aMixedLoadThroughPgbouncer(_ mode: PostgresConfiguration.Pooler) throws {
        let direct = try TestCluster.cluster().createDatabase("api_pooler_\(mode.rawValue)_\(getpid())")
        let bouncer = try TestPgBouncer(direct: direct, mode: mode.rawValue, poolSize: mode == .transaction ? 4 : 40)
        defer { bouncer.stop() }
        let server = try TestServer("pooler_\(mode.rawValue)") { configuration in
            configuration.databaseURL = bouncer.url
            configuration.databasePooler = mode
            configuration.accounts.housekeepingIntervalSeconds = 0.2
        }
        defer { server.shutdown() }
        let accounts = try (0..<16).map { _ in try server.register() }
        let statuses = Mutex<[Int: Int]>([:])
        try onThreads(16) { index in
            let account = accounts[index]
            for round in 0..<40 {
                let reply: Reply
                switch round % 4 {
                case 0, 2:
                    reply = try server.call("GET", "/users/me", token: account.token)
                case 1:
                    let etag = try server.call("GET", "/users/me", token: account.token).header("ETag") ?? "*"
                    reply = try server.call(
                        "PATCH", "/users/me", token: account.token, json: #"{"data": {"round": \#(round), "weight": \#(60 + index)}}"#,
                        headers: [("If-Match", etag)])
                default:
                    reply = try server.call(
                        "POST", "/users/signin", json: #"{"email": "\#(account.email)", "password": "\#(account.password)"}"#)
                    if let token = reply.json["accessToken"]?.stringValue { server.remember(token: token) }
                }
                statuses.withLock { $0[reply.status, default: 0] += 1 }
            }
        }
        let counts = statuses.withLock { $0 }
        #expect(counts == [200: 16 * 40], "\(mode): \(counts); pgbouncer: \(bouncer.log.suffix(2_000))")
        // Every write is there, read back directly from PostgreSQL.
        let connection = try PostgresConnection(connectionString: direct)
        defer { connection.close() }
        let rounds = try connection.query("SELECT count(*) FROM users WHERE (data->>'round')::int = 37")[0].decode(Int.self, at: 0)
        #expect(rounds == 16)
        // Images (COPY, and their chunked reads) and the housekeeping's locked batches.
        let upload = try ImageScenarios.upload(server, accounts[0].token, "image/png", RealFiles.png3x2)
        #expect(upload.status == 201)
        let id = try #require(upload.json["id"]?.stringValue)
        #expect(try server.call("GET", "/users/me/images/\(id)", token: accounts[0].token).body == RealFiles.png3x2)
        // Live events listen on a connection of their own: through pgbouncer in session mode they
        // work; in transaction mode nothing can LISTEN, and the route says so.
        if mode == .session {
            let stream = try EventStreamReader(port: server.port, token: accounts[1].token)
            defer { stream.close() }
            #expect(try server.call("PATCH", "/users/me", token: accounts[1].token, json: #"{"lastname": "Pooled"}"#).status == 200)
            let event = try #require(try stream.next())
            #expect(try event.name == "profile" && event.json["lastname"]?.stringValue == "Pooled", "\(event)")
        } else {
            let refused = try server.call("GET", "/users/me/events", token: accounts[1].token)
            #expect(refused.status == 501 && refused.json["code"]?.stringValue == "events_unavailable", "\(refused.text)")
        }
        // The server's own rounds (every 0.2 s here) may hold the lock at that moment: then nil,
        // and the next try gets it.
        try waitUntil(timeout: .seconds(10), "a housekeeping round through pgbouncer") {
            try server.app.accounts.housekeeping.runOnce() != nil
        }
        #expect(!bouncer.log.contains("unsupported startup parameter"))
        // In transaction mode the event loops' pipelines are off (pgbouncer 1.18 lent a pipeline's
        // server connection away at its first sync, and a later batch's answers went astray).
        let log = (try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? ""
        #expect(log.contains("pipelined database connections are off") == (mode == .transaction))
        #expect(!log.contains("pipelined database connection lost"))
    }

    /// Why a server declaring `pooler` refused to start behind a pgbouncer in `mode`; nil (and a
    /// recorded issue) when it started.
    func startRefusal(_ name: String, mode: String, declaring pooler: PostgresConfiguration.Pooler) throws -> String? {
        let direct = try TestCluster.cluster().createDatabase("api_\(name)_\(getpid())")
        let bouncer = try TestPgBouncer(direct: direct, mode: mode, poolSize: 4)
        defer { bouncer.stop() }
        do {
            let server = try TestServer(name) { configuration in
                configuration.databaseURL = bouncer.url
                configuration.databasePooler = pooler
            }
            server.shutdown()
            Issue.record("the server started behind pgbouncer in \(mode) mode, declaring \(pooler)")
            return nil
        } catch {
            return String(reflecting: error)
        }
    }

    @Test func statementModeIsRefusedAtStartWithTheReason() throws {
        let refusal = try startRefusal("pooler_statement", mode: "statement", declaring: .transaction)
        #expect(refusal?.contains("statement mode") == true, "\(refusal ?? "")")
    }

    /// Behind pgbouncer without `--db-pooler`, the start fails with one message that names the
    /// flag to set, not with pgbouncer's bare `unsupported startup parameter: options`.
    @Test func anUndeclaredPoolerIsNamedWithTheFlagToSet() throws {
        let refusal = try startRefusal("pooler_undeclared", mode: "session", declaring: .none) ?? ""
        #expect(refusal.contains("--db-pooler session or --db-pooler transaction"), "\(refusal)")
        #expect(refusal.contains("unsupported startup parameter"), "\(refusal)")
    }

    @Test func optionsInTheConnectionStringAreRefusedBehindAPooler() throws {
        var configuration = try PostgresConfiguration(connectionString: "host=/tmp dbname=x options='-c work_mem=64MB'")
        configuration.pooler = .transaction
        #expect(throws: PostgresError.self) { try PostgresConnection(configuration: configuration) }
    }
}
