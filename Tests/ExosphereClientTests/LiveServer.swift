import API
import ExosphereClient
import Foundation
import StructuredLogging
import Postgres
import PostgresCluster
import Synchronization
import TestSupport
import Testing
import Time

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The client; `API` has an `Exosphere` too (the server's command line).
typealias Client = ExosphereClient.Exosphere

/// The one throwaway PostgreSQL of this test process: started on first use, stopped at exit.
enum ClientTestCluster {
    static let started: Result<LocalCluster, any Error> = Result { try LocalCluster.startTemporary() }
}

/// A real Exosphere server (`Application`) in this process, on its own fresh database and a
/// port of 127.0.0.1, for the client to talk to. It can be stopped and started again on the same
/// port and database, as a restarted server would be.
final class LiveServer: Sendable {
    /// The server of the suite being run (set by the `.liveServer` trait).
    @TaskLocal static var current: LiveServer?

    let name: String
    let databaseURL: String
    let logPath: String
    /// The dev mailbox the server writes its mail to, one `.eml` file a message (no relay in tests).
    let mailDirectory: String
    /// What the server's lifetimes, throttle windows and expiries read, across restarts: a test
    /// moves it (`advanceClock(by:)`) instead of waiting.
    let clock: WallClock
    private let configuration: Configuration
    private let running = Mutex<Application?>(nil)
    private let boundPort = Atomic<Int>(0)
    private let counter = Atomic<Int>(0)
    private let logFD: Int32

    /// The repository root, from this file's path (`<root>/Tests/ExosphereClientTests/LiveServer.swift`).
    static let repositoryRoot: String = {
        var parts = String(#filePath).split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    /// Starts a server on a fresh database; `adjust` tunes its configuration.
    init(_ name: String, _ adjust: (inout Configuration) throws -> Void = { _ in }) throws {
        self.name = name
        databaseURL = try ClientTestCluster.started.get().createDatabase("client_\(name)_\(getpid())")
        var configuration = Configuration()
        configuration.databaseURL = databaseURL
        configuration.migrationsDirectory = LiveServer.repositoryRoot + "/migrations"
        configuration.server.port = 0
        configuration.server.eventLoops = 1
        configuration.server.workerThreads = 8
        configuration.server.lingerTimeout = .milliseconds(200)
        configuration.server.drainTimeout = .seconds(2)
        configuration.passwordHashing = .testing
        configuration.hashingThreads = 2
        configuration.hashingQueue = 64
        // A request's deadline is for outages (4 s by default, below a proxy's 5 s); four tests at
        // once on two cores are no outage, yet a production-cost hash waiting for a core has taken
        // longer. The suites that test the deadline set their own.
        configuration.server.requestDeadline = .seconds(60)
        configuration.databasePoolSize = 4
        // Every test signs in from 127.0.0.1.
        configuration.accounts.signInPerAddress.limit = 1_000_000
        configuration.accounts.registrationsPerAddress.limit = 0
        // Mail goes to a mailbox of this server's own (never the repository's), soon after it is
        // queued, and reset requests (resolved in the background) are resolved soon too.
        mailDirectory = try makeTemporaryDirectory("exo-client-mail-\(name)")
        configuration.mail.transport = .mailbox(directory: mailDirectory)
        configuration.mail.pollIntervalSeconds = 0.2
        // The thumbnail helpers are the built `exosphere-thumbnailer`.
        configuration.thumbnails.executable = TestImages.thumbnailerExecutable() ?? "exosphere-thumbnailer"
        configuration.accounts.resetResolveIntervalSeconds = 0.2
        configuration.accounts.clock = WallClock()
        try adjust(&configuration)
        clock = configuration.accounts.clock
        self.configuration = configuration
        logPath = "/tmp/exo-clienttests-\(name)-\(getpid()).log"
        logFD = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0o600)
        guard logFD >= 0 else { throw LiveServerError("cannot open \(logPath)") }
        try start()
    }

    /// Starts the server: on a free port the first time, on that same port afterwards.
    func start() throws {
        var configuration = configuration
        configuration.server.port = boundPort.load(ordering: .relaxed)
        let logger = Logger(label: "clienttests.\(name)", level: .info, format: .json, fd: logFD)
        let app = try Application(configuration: configuration, logger: logger)
        boundPort.store(app.server.port, ordering: .relaxed)
        running.withLock { $0 = app }
    }

    /// Drains and stops the server; the database stays.
    func stop() {
        let app = running.withLock { app -> Application? in
            defer { app = nil }
            return app
        }
        app?.shutdown()
    }

    /// Stops the server and closes its log and mailbox (kept when `keepLog`).
    func finish(keepLog: Bool) {
        stop()
        close(logFD)
        if !keepLog {
            unlink(logPath)
            try? FileManager.default.removeItem(atPath: mailDirectory)
        }
    }

    /// Moves the clock `seconds` forward, once the running server has written the session use it
    /// noted: a use made before the move counts at the time it was made.
    func advanceClock(by seconds: Double) {
        running.withLock { $0 }?.accounts.sessions.recordSessionUse()
        clock.advance(by: seconds)
    }

    var port: Int { boundPort.load(ordering: .relaxed) }
    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// A client of this server that keeps its session in memory and its images in a new directory.
    func client(
        store: any SessionStore = InMemorySessionStore(), imageCache: URL? = nil,
        _ adjust: (inout Client.Configuration) -> Void = { _ in }
    ) throws -> Client {
        var configuration = Client.Configuration()
        configuration.imageCacheDirectory = try imageCache ?? temporaryDirectory("images")
        configuration.retryPolicy.networkRetryDelay = 0.05
        // Hashes run in the idle scheduling class: with the whole suite on two cores one may wait
        // longer than the 30 s default, and a test without retries would fail for the machine's sake.
        configuration.timeoutInterval = 300
        adjust(&configuration)
        return Client(baseURL: baseURL, sessionStore: store, configuration: configuration)
    }

    // MARK: - Accounts

    /// An email address no other test of the process uses.
    func uniqueEmail(_ prefix: String = "user") -> String {
        "\(prefix)-\(counter.add(1, ordering: .relaxed).newValue)@example.com"
    }

    /// A client signed in to a new account, and the account's password.
    func signedInClient(
        firstname: String? = nil, data: [String: FieldValue] = [:], store: any SessionStore = InMemorySessionStore(),
        _ adjust: (inout Client.Configuration) -> Void = { _ in }
    ) async throws -> (Client, email: String, password: String) {
        let client = try client(store: store, adjust)
        let email = uniqueEmail()
        let password = "pw-\(UInt32.random(in: 100_000...999_999))-correct horse"
        try await client.register(email: email, password: password, firstname: firstname, data: data)
        return (client, email, password)
    }

    // MARK: - Looking at the server from outside the client

    /// The value of one exact series of `GET /metrics`, 0 when absent.
    func metric(_ series: String) async throws -> Int {
        let (data, _) = try await URLSession.shared.data(from: baseURL.appendingPathComponent("metrics"))
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Int(Double(line.split(separator: " ")[1]) ?? 0)
        }
        return 0
    }

    /// How many requests the server answered for a route pattern, method and status.
    func requests(_ method: String, _ route: String, _ status: Int) async throws -> Int {
        try await metric(#"exosphere_http_requests_total{route="\#(route)",method="\#(method)",status="\#(status)"}"#)
    }

    /// The mails to `address` so far, oldest first, with quoted-printable soft line breaks and
    /// `=3D` undone so that links can be searched for.
    func mails(to address: String) -> [String] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: mailDirectory)) ?? [])
            .filter { $0.hasSuffix(".eml") && !$0.hasPrefix(".") }
            .sorted()  // `<milliseconds since 1970>-<message ID>.eml`
        return names.compactMap { name -> String? in
            guard let data = FileManager.default.contents(atPath: mailDirectory + "/" + name) else { return nil }
            let message = String(decoding: data, as: UTF8.self)
            guard LiveServer.recipient(of: message) == address.lowercased() else { return nil }
            return message.replacingOccurrences(of: "=\r\n", with: "").replacingOccurrences(of: "=3D", with: "=")
        }
    }

    /// The address of a message's `To` field, lowercased.
    private static func recipient(of message: String) -> String? {
        let head = message.components(separatedBy: "\r\n\r\n")[0]
            .replacingOccurrences(of: "\r\n ", with: " ").replacingOccurrences(of: "\r\n\t", with: " ")
        guard let line = head.components(separatedBy: "\r\n").first(where: { $0.lowercased().hasPrefix("to:") }) else { return nil }
        var value = Substring(line.dropFirst(3))
        if let open = value.lastIndex(of: "<"), let close = value.lastIndex(of: ">"), open < close {
            value = value[value.index(after: open)..<close]
        }
        return value.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// The link `…/<path>#token=…` of the newest mail to `address` that has one, once there are
    /// at least `count` such mails (waiting up to 60 s for them: mail is sent in the background).
    func mailedLink(to address: String, path: String, count: Int = 1) async throws -> URL {
        let marker = "/\(path)#token="
        return try await newest(count, "mails with \(marker)", to: address) { LiveServer.link(in: $0, marker: marker) }
    }

    /// The 8 digits of the newest code mail to `address`, once `count` came (60 s at most).
    func mailedCode(to address: String, count: Int = 1) async throws -> String {
        try await newest(count, "code mails", to: address) { mail in
            mail.components(separatedBy: "\r\n").first { $0.count == 8 && $0.allSatisfy { $0.isASCII && $0.isNumber } }
        }
    }

    /// What `extract` finds in the newest of the mails to `address` that hold it, once `count` of
    /// them came: polled until then, for 60 s at most (mail is sent in the background).
    private func newest<T>(_ count: Int, _ what: String, to address: String, _ extract: (String) -> T?) async throws -> T {
        let deadline = Date().addingTimeInterval(60)
        while true {
            let found = mails(to: address).compactMap(extract)
            if found.count >= count { return found[found.count - 1] }
            guard Date() < deadline else { throw LiveServerError("\(found.count) of \(count) \(what) to \(address) within 60 s") }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
    }

    /// The first link containing `marker` in a message: back to the start of the URL, on to the
    /// end of the base64url token.
    private static func link(in message: String, marker: String) -> URL? {
        guard let range = message.range(of: marker) else { return nil }
        let delimiters: Set<Character> = [" ", "\r\n", "\r", "\n", "\"", "<", ">", "(", "'"]
        var start = range.lowerBound
        while start > message.startIndex, !delimiters.contains(message[message.index(before: start)]) {
            start = message.index(before: start)
        }
        let token = message[range.upperBound...].prefix { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        return URL(string: String(message[start..<range.upperBound]) + token)
    }

    /// Runs `body` on a new connection to this server's database; returns once the server's
    /// session cache (when it runs) has applied what `body` committed.
    func withDatabase<R>(_ body: (PostgresConnection) throws -> R) throws -> R {
        let connection = try PostgresConnection(connectionString: databaseURL)
        defer {
            connection.close()
            running.withLock { $0 }?.accounts.sessions.catchUpWithTheDatabase()
        }
        return try body(connection)
    }
}

/// A new empty directory under /tmp.
func temporaryDirectory(_ prefix: String) throws -> URL {
    URL(fileURLWithPath: try makeTemporaryDirectory("exo-client-\(prefix)"), isDirectory: true)
}

struct LiveServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Starts a `LiveServer` around a whole suite and stops it afterwards (its log is kept when a
/// test failed).
struct LiveServerTrait: SuiteTrait, TestScoping {
    let name: String
    let adjust: @Sendable (inout Configuration) throws -> Void

    var isRecursive: Bool { false }

    func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // Starting and stopping a server blocks: on a test thread, while a place for a server is held.
        try await TestThreads.run(holding: TestThreads.serverLimit) {
            let server = try LiveServer(name, adjust)
            do {
                try await LiveServer.$current.withValue(server) { try await function() }
            } catch {
                server.finish(keepLog: true)
                throw error
            }
            server.finish(keepLog: false)
        }
    }
}

extension Trait where Self == LiveServerTrait {
    /// Runs the suite against its own live server; `adjust` tunes the server's configuration.
    static func liveServer(_ name: String, _ adjust: @escaping @Sendable (inout Configuration) throws -> Void = { _ in }) -> Self {
        LiveServerTrait(name: name, adjust: adjust)
    }
}

/// The suite's server.
func liveServer() throws -> LiveServer { try #require(LiveServer.current) }

/// The error a call threw, as an `ExosphereError` (a failed expectation when it threw none or another).
func exosphereError(_ sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void) async -> ExosphereError? {
    do {
        try await body()
        Issue.record("expected an ExosphereError, got none", sourceLocation: sourceLocation)
    } catch let error as ExosphereError {
        return error
    } catch {
        Issue.record("expected an ExosphereError, got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}
