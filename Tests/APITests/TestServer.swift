import Files
import API
import Accounts
import Glibc
import JSON
import StructuredLogging
import Postgres
import PostgresCluster
import SocketClient
import Cryptography
import Synchronization
import TestSupport
import Testing
import Time

/// The one throwaway PostgreSQL of this test process: started on first use, stopped at exit
/// (LocalCluster's atexit handler, or its watchdog if the run is killed).
enum TestCluster {
    static let started: Result<LocalCluster, any Error> = Result { try LocalCluster.startTemporary() }
    static func cluster() throws -> LocalCluster { try started.get() }
}

/// A running `Application` on its own fresh database, spoken to over real sockets; one per suite.
///
/// It remembers every password and token the tests used and every response body it received,
/// so that the suite can check at the end that none of them leaked into a response or the log.
final class TestServer: Sendable {
    /// The server of the suite being run (set by the `.liveServer` trait).
    @TaskLocal static var current: TestServer?

    let app: Application
    let databaseURL: String
    let logPath: String
    let port: Int
    /// What the server's lifetimes, throttle windows and expiries read: a test moves it
    /// (`advanceClock(by:)`) instead of waiting. Servers sharing a database share it.
    let clock: WallClock
    private let logFD: Int32
    private let seen = Mutex(Seen())
    private let counter = Atomic<Int>(0)
    private let stopped = Atomic<Bool>(false)
    private let name: String

    struct Seen {
        var passwords: Set<String> = []
        var tokens: Set<String> = []
        var bodies: [[UInt8]] = []
        var serverErrors: [String] = []
    }

    /// The repository root, found from this file's path (`<root>/Tests/APITests/TestServer.swift`).
    static let repositoryRoot: String = {
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    /// A server on a fresh database of `cluster` (the test process's shared one by default), or
    /// a second instance on the database of `sibling`.
    init(
        _ name: String, cluster: LocalCluster? = nil, sharingDatabaseWith sibling: TestServer? = nil,
        _ adjust: (inout Configuration) throws -> Void = { _ in }
    ) throws {
        self.name = name
        if let sibling {
            databaseURL = sibling.databaseURL
        } else {
            let cluster = try cluster ?? TestCluster.cluster()
            databaseURL = try cluster.createDatabase("api_\(name)_\(getpid())")
        }
        var configuration = TestServer.configuration(name, databaseURL: databaseURL)
        configuration.accounts.clock = sibling?.clock ?? WallClock()
        try adjust(&configuration)
        clock = configuration.accounts.clock
        logPath = "/tmp/exo-apitests-\(name)-\(getpid()).log"
        logFD = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600)
        guard logFD >= 0 else { throw TestFailure("cannot open \(logPath)") }
        let logger = Logger(label: "apitests.\(name)", level: .debug, format: .json, fd: logFD)
        do {
            app = try Application(configuration: configuration, logger: logger)
        } catch {
            close(logFD)
            throw error
        }
        port = app.server.port
    }

    /// The configuration every test server starts from: port 0, one event loop, fast test
    /// hashing, a dev mailbox and quick retries of its own, the built thumbnail helper.
    static func configuration(_ name: String, databaseURL: String) -> Configuration {
        var configuration = Configuration()
        configuration.databaseURL = databaseURL
        configuration.server.port = 0
        configuration.server.eventLoops = 1
        configuration.server.workerThreads = 16
        configuration.server.lingerTimeout = .milliseconds(500)
        configuration.passwordHashing = .testing
        configuration.hashingThreads = 2
        configuration.hashingQueue = 64
        // A request's deadline is for outages (4 s by default, below a proxy's 5 s); four tests at
        // once on two cores are no outage, yet a production-cost hash waiting for a core has taken
        // longer. The suites that test the deadline set their own.
        configuration.server.requestDeadline = .seconds(60)
        configuration.databasePoolSize = 6
        configuration.images.totalsMaxAgeSeconds = 0
        configuration.accounts.signInPerAddress = ThrottleRule(limit: 1_000_000, windowSeconds: 900)
        // Mail goes to a dev mailbox of this server's own (never the repository's), and retries are quick.
        configuration.mail.transport = .mailbox(directory: "/tmp/exo-apitests-mail-\(name)-\(getpid())")
        configuration.mail.pollIntervalSeconds = 0.5
        configuration.mail.retryBaseSeconds = 0.2
        configuration.mail.retryMaxSeconds = 1
        configuration.accounts.resetResolveIntervalSeconds = 0.2
        // The helpers are the built `exosphere-thumbnailer`.
        configuration.thumbnails.executable = TestImages.thumbnailerExecutable() ?? "exosphere-thumbnailer"
        return configuration
    }

    /// Stops the server; a second call does nothing (a test may stop it early, before its `defer`,
    /// and the log's descriptor must be closed only once: its number may be another's by then).
    func shutdown() {
        guard !stopped.exchange(true, ordering: .sequentiallyConsistent) else { return }
        app.shutdown()
        close(logFD)
        // The dev mailbox holds files only.
        if case .mailbox(let directory) = app.configuration.mail.transport, let names = try? FileSystem.entries(of: directory) {
            for name in names { _ = try? FileSystem.remove(directory + "/" + name) }
            rmdir(directory)
        }
    }

    // MARK: - Requests

    /// Sends one request on a new connection and returns the whole response.
    @discardableResult
    func send(_ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> Reply {
        let reply = try HTTPClient.send(port: port, method: method, target: target, headers: headers, body: body)
        seen.withLock {
            $0.bodies.append(reply.body)
            if reply.status >= 500 { $0.serverErrors.append("\(method) \(target.prefix(40)) → \(reply.status)") }
        }
        return reply
    }

    /// A request with an optional bearer token and an optional JSON body (sent as `application/json`
    /// unless `contentType` says otherwise).
    @discardableResult
    func call(
        _ method: String, _ target: String, token: String? = nil, json: String? = nil,
        contentType: String? = "application/json", headers: [(String, String)] = []
    ) throws -> Reply {
        var all = headers
        if let token { all.append(("Authorization", "Bearer \(token)")) }
        if json != nil, let contentType { all.append(("Content-Type", contentType)) }
        return try send(method, target, headers: all, body: json.map { Array($0.utf8) })
    }

    // MARK: - Accounts

    /// An email address no other test of this suite uses.
    func uniqueEmail(_ prefix: String = "user") -> String {
        "\(prefix)-\(counter.add(1, ordering: .relaxed).newValue)@example.com"
    }

    /// A password no other test uses, long enough to pass the policy; remembered as a secret.
    func uniquePassword(_ prefix: String = "pw") -> String {
        let password = "\(prefix)-\(counter.add(1, ordering: .relaxed).newValue)-S3cret!\(UInt32.random(in: 100_000...999_999))"
        remember(password: password)
        return password
    }

    func remember(password: String) { seen.withLock { _ = $0.passwords.insert(password) } }
    func remember(token: String) { seen.withLock { _ = $0.tokens.insert(token) } }

    /// A registered user with one session.
    struct Account {
        var email: String
        var password: String
        var token: String
        var id: String
        var user: JSONValue
    }

    /// Registers a user (201 expected) and returns their first session.
    func register(
        email: String? = nil, password: String? = nil, extra: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws -> Account {
        let email = email ?? uniqueEmail()
        let password = password ?? uniquePassword()
        remember(password: password)
        let reply = try call("POST", "/users", json: #"{"email": \#(jsonString(email)), "password": \#(jsonString(password))\#(extra)}"#)
        try #require(reply.status == 201, "register: \(reply.status) \(reply.text)", sourceLocation: sourceLocation)
        let token = try #require(reply.json["accessToken"]?.stringValue, sourceLocation: sourceLocation)
        remember(token: token)
        let id = try #require(reply.json["user"]?["id"]?.stringValue, sourceLocation: sourceLocation)
        return Account(email: email, password: password, token: token, id: id, user: reply.json["user"] ?? .null)
    }

    /// `POST /users/signin`; remembers the token it returns.
    @discardableResult
    func signIn(_ email: String, _ password: String, userAgent: String? = nil) throws -> Reply {
        remember(password: password)
        let reply = try call(
            "POST", "/users/signin", json: #"{"email": \#(jsonString(email)), "password": \#(jsonString(password))}"#,
            headers: userAgent.map { [("User-Agent", $0)] } ?? [])
        if let token = reply.json["accessToken"]?.stringValue { remember(token: token) }
        return reply
    }

    /// Signs in and returns the new token (200 expected).
    /// Marks the account's address verified, as its verification link would (a test of something
    /// else that needs a verified address: adding a way in).
    func verifyAddress(_ account: Account) throws {
        try withDatabase { connection in
            _ = try connection.execute("UPDATE users SET email_verified = true WHERE id = \(account.id)::uuid")
        }
    }

    func newSession(_ account: Account, userAgent: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let reply = try signIn(account.email, account.password, userAgent: userAgent)
        try #require(reply.status == 200, "sign-in: \(reply.status) \(reply.text)", sourceLocation: sourceLocation)
        return try #require(reply.json["accessToken"]?.stringValue, sourceLocation: sourceLocation)
    }

    /// `GET /users/me` with `token`.
    func me(_ token: String) throws -> Reply { try call("GET", "/users/me", token: token) }

    /// Forgets the server errors with `status` received so far, for a test that provokes them.
    func acceptServerErrors(_ status: Int) {
        seen.withLock { $0.serverErrors.removeAll { $0.hasSuffix("→ \(status)") } }
    }

    /// An unlabelled integer sample of `GET /metrics`.
    func metric(_ name: String) throws -> Int? {
        let text = String(decoding: try call("GET", "/metrics").body, as: UTF8.self)
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ")[1]) }
    }

    /// The event loops' pipelined connections to this server's database.
    func pipelineBackends() throws -> Int {
        try PostgresConnection(connectionString: databaseURL).query(
            """
            SELECT count(*)::int8 FROM pg_stat_activity WHERE application_name = 'exosphere-pipeline' AND datname = current_database()
            """)[0].decode(Int.self, at: 0)
    }

    /// Ends the event loops' pipelined connections as a database restart would; how many it ended.
    @discardableResult
    func terminatePipelineBackends() throws -> Int {
        try PostgresConnection(connectionString: databaseURL).query(
            """
            SELECT (count(*) FILTER (WHERE pg_terminate_backend(pid)))::int8 FROM pg_stat_activity
            WHERE application_name = 'exosphere-pipeline' AND datname = current_database()
            """)[0].decode(Int.self, at: 0)
    }

    // MARK: - Time

    /// Moves the clock `seconds` forward, once this server has written the session use it noted
    /// (which it otherwise writes within a second): a use made before the move counts at the time
    /// it was made, not after it.
    func advanceClock(by seconds: Double) {
        app.accounts.sessions.recordSessionUse()
        clock.advance(by: seconds)
    }

    // MARK: - Database

    /// Runs `body` on a new connection to this suite's database; returns once the server's
    /// session cache has applied what `body` committed, as an instance does after its own writes.
    func withDatabase<R>(_ body: (PostgresConnection) throws -> R) throws -> R {
        let connection = try PostgresConnection(configuration: try PostgresConfiguration(connectionString: databaseURL))
        defer {
            connection.close()
            app.accounts.sessions.catchUpWithTheDatabase()
        }
        return try body(connection)
    }

    // MARK: - Secrets

    /// Every place a secret must not be: the log file, and every response body (a token only in
    /// the one response that issued it). Also: no request of the suite may have got a 5xx.
    /// Returns the problems found.
    func leaks() -> [String] {
        let log = (try? readFile(logPath)) ?? []
        let seen = seen.withLock { $0 }
        var problems: [String] = seen.serverErrors.map { "server error: \($0)" }
        if log.isEmpty { problems.append("the log file \(logPath) is empty") }
        if contains(log, "$scrypt$") { problems.append("a scrypt hash is in the log") }
        for (index, body) in seen.bodies.enumerated() where contains(body, "$scrypt$") {
            problems.append("response #\(index) holds a scrypt hash")
        }
        // Named by a short prefix and the length only, so the report itself stays harmless.
        func hint(_ secret: String) -> String { "\(secret.prefix(4))…(\(secret.utf8.count) bytes)" }
        for password in seen.passwords {
            if contains(log, password) { problems.append("password \(hint(password)) is in the log") }
            if seen.bodies.contains(where: { contains($0, password) }) { problems.append("password \(hint(password)) is in a response") }
        }
        for token in seen.tokens {
            if contains(log, token) { problems.append("token \(hint(token)) is in the log") }
            let holders = seen.bodies.filter { contains($0, token) }.count
            if holders > 1 { problems.append("token \(hint(token)) is in \(holders) responses") }
        }
        return problems
    }

    /// How many responses the suite received (to show the leak check looked at something).
    var responseCount: Int { seen.withLock { $0.bodies.count } }
}

/// Starts a `TestServer` (fresh database, migrations, real socket) around a whole suite, shuts it
/// down after the suite, and then checks that no secret leaked.
struct LiveServerTrait: SuiteTrait, TestScoping {
    let name: String
    let adjust: @Sendable (inout Configuration) throws -> Void

    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Starting and stopping a server blocks: on a test thread, while a place for a server is held.
        try await TestThreads.run(holding: TestThreads.serverLimit) {
            let server = try TestServer(name, adjust)
            do {
                try await TestServer.$current.withValue(server) { try await function() }
            } catch {
                server.shutdown()
                throw error
            }
            server.shutdown()
            let problems = server.leaks()
            if !problems.isEmpty {
                throw TestFailure("suite \(name) (log kept at \(server.logPath)): \(Set(problems).sorted().joined(separator: "; "))")
            }
            unlink(server.logPath)
        }
    }
}

extension Trait where Self == LiveServerTrait {
    /// Runs the suite against its own live server; `adjust` tunes the configuration.
    static func liveServer(_ name: String, _ adjust: @escaping @Sendable (inout Configuration) throws -> Void = { _ in }) -> Self {
        LiveServerTrait(name: name, adjust: adjust)
    }
}

// MARK: - HTTP client

/// A received HTTP response.
struct Reply: Sendable {
    var status: Int
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    /// The first header of that name (case-insensitive).
    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    func headers(named name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// The body parsed as JSON. A body that is not JSON fails the test (recorded as an issue,
    /// with the status and the start of the body) and reads as `.null`, so that a check on a
    /// member of it, such as `reply.json["accessToken"] == nil`, cannot pass by accident.
    var json: JSONValue {
        do {
            return try JSONParser.parse(body)
        } catch {
            Issue.record(
                """
                the response body is not JSON (\(error)): status \(status), Content-Type \(header("Content-Type") ?? "none"), \
                \(body.count) bytes: \(text.prefix(200).debugDescription)
                """)
            return .null
        }
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    /// The problem code of an error response.
    var code: String? { json["code"]?.stringValue }

    /// The first field error's field and code.
    var firstError: (field: String?, code: String?, detail: String?) {
        let first = json["errors"]?[0]
        return (first?["field"]?.stringValue, first?["code"]?.stringValue, first?["detail"]?.stringValue)
    }
}

/// One-shot requests over `SocketClient`'s connection, each on a connection of its own
/// (`Connection: close`), with 30-second timeouts.
enum HTTPClient {
    static func send(
        port: Int, method: String, target: String, headers: [(String, String)], body: [UInt8]?,
        deadline: ContinuousClock.Instant? = nil
    ) throws -> Reply {
        let connection = try HTTPClientConnection(port: port, deadline: deadline)
        // A server may answer (413) before reading the whole body; it then discards the rest.
        try? connection.send(request(port: port, method: method, target: target, headers: headers, body: body))
        let response = try connection.readResponse(head: method == "HEAD", bodyToEndWithoutLength: true)
        return Reply(status: response.status, headers: response.headers, body: response.body)
    }

    /// Sends a request and closes the connection at once, without reading the answer: a client
    /// that gave up.
    static func sendAndHangUp(port: Int, method: String, target: String, headers: [(String, String)], body: [UInt8]?) throws {
        let connection = try HTTPClientConnection(port: port)
        try? connection.send(request(port: port, method: method, target: target, headers: headers, body: body))
    }

    /// A blocking TCP connection to 127.0.0.1:`port` with 30-second timeouts, for raw bytes;
    /// `receiveBuffer` makes the kernel's receive buffer that small (a client that reads slowly).
    static func connect(port: Int, receiveBuffer: Int32? = nil) throws -> Int32 {
        try HTTPClientConnection.connectSocket(port: port, receiveBuffer: receiveBuffer)
    }

    private static func request(port: Int, method: String, target: String, headers: [(String, String)], body: [UInt8]?) -> [UInt8] {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body, !headers.contains(where: { ["content-length", "transfer-encoding"].contains($0.0.lowercased()) }) {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + (body ?? [])
    }
}

func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? { HTTPClientConnection.find(haystack, needle) }

func contains(_ haystack: [UInt8], _ needle: String) -> Bool { find(haystack, Array(needle.utf8)) != nil }

func readFile(_ path: String) throws -> [UInt8] { try FileReader.bytes(path, limit: 1 << 30) }

/// A JSON string literal for `text`.
func jsonString(_ text: String) -> String { JSONValue.string(text).serializedString() }

/// Milliseconds since the Unix epoch of an RFC 3339 UTC timestamp with milliseconds
/// (`2026-11-29T17:39:01.123Z`), or nil when `text` is not exactly that form.
func epochMilliseconds(_ text: String) -> Int64? {
    let bytes = Array(text.utf8)
    guard bytes.count == 24, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
        bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "."),
        bytes[23] == UInt8(ascii: "Z")
    else { return nil }
    func number(_ from: Int, _ count: Int) -> Int64? {
        var value: Int64 = 0
        for byte in bytes[from..<(from + count)] {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int64(byte - 0x30)
        }
        return value
    }
    guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
        let minute = number(14, 2), let second = number(17, 2), let millis = number(20, 3),
        (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
    else { return nil }
    // Days from civil (Howard Hinnant).
    let y = month <= 2 ? year - 1 : year
    let era = y / 400
    let yoe = y - era * 400
    let mp = (month + 9) % 12
    let doy = (153 * mp + 2) / 5 + day - 1
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
    let days = era * 146_097 + doe - 719_468
    return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
}

/// Milliseconds since the Unix epoch, now.
func nowMilliseconds() -> Int64 {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
}

/// The keys of a JSON object, sorted.
func keys(_ value: JSONValue?) -> [String] { value?.objectValue?.keys.sorted() ?? [] }

/// Whether a token looks like ours: 43 base64url characters.
func isBase64URLToken(_ text: String) -> Bool {
    text.utf8.count == 43
        && text.utf8.allSatisfy { byte in
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
}

/// Lowercase hex of bytes.
func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    return String(decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] }, as: UTF8.self)
}

extension String {
    func trimmingSpaces() -> String {
        var slice = Substring(self)
        while slice.first == " " || slice.first == "\t" { slice.removeFirst() }
        while slice.last == " " || slice.last == "\t" { slice.removeLast() }
        return String(slice)
    }

    /// Splits on a separator string (no Foundation here).
    func components(separatedBy separator: String) -> [String] {
        var parts: [String] = []
        var rest = Substring(self)
        while let range = rest.firstRange(of: separator) {
            parts.append(String(rest[..<range.lowerBound]))
            rest = rest[range.upperBound...]
        }
        parts.append(String(rest))
        return parts
    }
}
