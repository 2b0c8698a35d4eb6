import API
import Cryptography
import Foundation
import Glibc
import JSON
import Synchronization
import TestSupport
import Testing

/// An operator's first ten minutes with the zero-configuration server: `exosphere serve` on its
/// managed PostgreSQL, the commands beside it, and the first administrator made in the browser.
@Suite(.testThreads) struct FirstTenMinutesTests {
    typealias Child = ExosphereProcessTests.Child
    static let password = "first operator 1"

    /// A JSON request to a child's port: the status and the parsed body (`.null` when empty).
    static func post(_ port: Int, _ target: String, _ json: String, token: String? = nil) throws -> (status: Int, json: JSONValue) {
        var headers = [("Content-Type", "application/json")]
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        let reply = try HTTPClient.send(port: port, method: "POST", target: target, headers: headers, body: Array(json.utf8))
        return (reply.status, reply.body.isEmpty ? .null : try JSONParser.parse(reply.body))
    }

    /// The one-time link a server with no administrator prints once it listens.
    static func setupLink(of serve: Child) throws -> String {
        var link: String?
        try waitUntil(timeout: .seconds(30), "serve to print the console's setup link") {
            link = serve.stderr.split(whereSeparator: { $0 == " " || $0 == "\n" }).first {
                $0.hasPrefix("http://") && $0.contains("/console/#setup=")
            }
            .map(String.init)
            return link != nil || !serve.isRunning
        }
        return try #require(link, "no setup link: \(serve.stderr)")
    }

    /// A command of the binary beside `serve`, on the same managed cluster; waits for its end.
    static func command(_ arguments: [String], dataDirectory: String, input: String? = nil) throws -> Child {
        let binary = try #require(ExosphereProcessTests.executable(), "exosphere binary not found")
        let child = try Child(
            executable: binary.path, arguments: arguments + ["--log-level", "notice"],
            environment: ["EXOSPHERE_DATA_DIR": dataDirectory, "LOG_FORMAT": "logfmt"], port: 0, standardInput: input)
        #expect(child.waitForExit(timeout: 120), "exosphere \(arguments.joined(separator: " ")) still running after 120 s")
        return child
    }

    /// The README's `exosphere admin create` while `dist/exosphere serve` runs: it joins the
    /// cluster the server holds (no second postgres on the same data directory), the server sees
    /// the administrator at once, and without a server the command starts the cluster itself.
    @Test func commandsBesideServeUseTheClusterTheRunningServerHolds() throws {
        let serve = try ExosphereProcessTests.serve()
        let cluster = serve.dataDirectory + "/pg"
        let link = try Self.setupLink(of: serve)

        let create = try Self.command(
            ["admin", "create", "--email", "first@example.com", "--password-stdin"], dataDirectory: cluster, input: Self.password + "\n")
        #expect(create.exitCode == 0, "\(create.stderr)")
        #expect(create.stdout.contains("admin created: first@example.com"), "\(create.stdout)")
        #expect(create.stderr.contains("using the managed PostgreSQL another process runs"), "\(create.stderr)")
        #expect(!create.stderr.contains("starting managed PostgreSQL"), "\(create.stderr)")

        // The running server sees it: one database.
        let signIn = try Self.post(serve.port, "/admin/signin", #"{"email": "first@example.com", "password": "\#(Self.password)"}"#)
        #expect(signIn.status == 200, "\(signIn.json)")
        // Now that there is an administrator, the link made before it creates none.
        let token = String(link[link.range(of: "#setup=")!.upperBound...])
        let late = try Self.post(
            serve.port, "/admin/setup", #"{"token": "\#(token)", "email": "second@example.com", "password": "\#(Self.password)"}"#)
        #expect(late.status == 409 && late.json["code"] == "admin_exists", "\(late)")

        let list = try Self.command(["admin", "list"], dataDirectory: cluster)
        #expect(list.exitCode == 0 && list.stdout.hasPrefix("first@example.com\t"), "\(list.stdout) \(list.stderr)")
        for arguments in [["keys", "rotate"], ["migrate"]] {
            let other = try Self.command(arguments, dataDirectory: cluster)
            #expect(
                other.exitCode == 0 && other.stderr.contains("using the managed PostgreSQL another process runs"), "\(arguments): \(other.stderr)")
        }

        // A second server on the same data directory says what to do instead of failing on the lock.
        let second = try Self.command(["serve", "--host", "127.0.0.1", "--port", "0"], dataDirectory: cluster)
        #expect(second.exitCode == 1, "\(second.stderr)")
        #expect(second.stderr.contains("already runs") && second.stderr.contains("--database-url"), "\(second.stderr)")
        #expect(try httpGet(port: serve.port, path: "/readyz").status == 200, "the first server lost its database")

        serve.signal(SIGTERM)
        #expect(serve.waitForExit(timeout: 20))
        #expect(serve.exitCode == 0, "\(serve.stderr)")
        // No server now: the command starts the cluster (and stops it again), and the data is there.
        let alone = try Self.command(["admin", "list"], dataDirectory: cluster)
        #expect(alone.exitCode == 0 && alone.stdout.hasPrefix("first@example.com\t"), "\(alone.stdout) \(alone.stderr)")
        #expect(alone.stderr.contains("starting managed PostgreSQL"), "\(alone.stderr)")
    }

    /// Like PocketBase: the link `serve` prints opens the console's setup form in a real headless
    /// Chromium (`Tests/Browser/console_setup.py`); the first administrator is created and signed
    /// in, the token leaves the address bar, and the same link then fails with the API's detail.
    @Test(.drill) func theFirstAdministratorIsCreatedFromTheSetupLinkInARealBrowser() throws {
        let serve = try ExosphereProcessTests.serve()
        let link = try Self.setupLink(of: serve)
        let screenshots = TestServer.repositoryRoot + "/artifacts/screenshots/console-setup"
        try FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)
        let output = try run(
            "/usr/bin/python3",
            [
                TestServer.repositoryRoot + "/Tests/Browser/console_setup.py", "--link", link, "--email", "owner@example.com",
                "--password", Self.password, "--screenshots", screenshots,
            ])
        #expect(output.contains("OK: the setup link made the first administrator"), "\(output)")
        let signIn = try Self.post(serve.port, "/admin/signin", #"{"email": "owner@example.com", "password": "\#(Self.password)"}"#)
        #expect(signIn.status == 200, "\(signIn.json)")
        let admin = try #require(signIn.json["accessToken"]?.stringValue)
        let audit = try HTTPClient.send(
            port: serve.port, method: "GET", target: "/admin/audit", headers: [("Authorization", "Bearer \(admin)")], body: nil)
        let actions = try JSONParser.parse(audit.body)["entries"]?.arrayValue?.compactMap { $0["action"]?.stringValue } ?? []
        #expect(actions.contains("admin.setup"), "\(actions)")
        // A restart with an administrator prints no link.
        serve.signal(SIGTERM)
        #expect(serve.waitForExit(timeout: 20))
    }

    /// The promise under races: many setups at once, with every link two instances printed, make
    /// exactly one administrator; only the token's hash is stored, and it works once.
    @Test func racingSetupsMakeExactlyOneAdministrator() throws {
        let first = try TestServer("admin_setup1")
        defer { first.shutdown() }
        let second = try TestServer("admin_setup2", sharingDatabaseWith: first)
        defer { second.shutdown() }
        let links = try [first.app.adminSetupLink(), second.app.adminSetupLink()].map { try #require($0) }
        let tokens = links.map { String($0[$0.range(of: "#setup=")!.upperBound...]) }
        #expect(links[0].hasPrefix("http://") && links[0].contains(":\(first.port)/console/#setup="), "\(links[0])")
        let stored = try first.app.database.pool.withConnection { connection in
            try connection.query("SELECT token_hash FROM admin_setup_tokens").map { try $0.decode([UInt8].self, at: 0) }
        }
        #expect(Set(stored) == Set(tokens.map { SessionToken.hash(of: $0) }), "the table holds the tokens' hashes, nothing else")

        let statuses = Mutex<[Int]>([])
        let barrier = Barrier(12)
        try onThreads(12) { index in
            try barrier.arrive()
            let server = index % 2 == 0 ? first : second
            let body = #"{"token": "\#(tokens[index % 2])", "email": "racer\#(index)@example.com", "password": "\#(Self.password)"}"#
            let reply = try server.call("POST", "/admin/setup", json: body)
            statuses.withLock { $0.append(reply.status) }
        }
        let counts = tally(statuses.withLock { $0 })
        #expect(counts[200] == 1, "12 racing setups: \(counts)")
        #expect(counts.keys.allSatisfy { [200, 401, 409].contains($0) }, "\(counts)")
        #expect(try first.app.accounts.administrators.admins().count == 1)
        // Every link is spent: its own token was consumed, the other one with the first administrator.
        for token in tokens {
            let again = try first.call(
                "POST", "/admin/setup", json: #"{"token": "\#(token)", "email": "late@example.com", "password": "\#(Self.password)"}"#)
            #expect(again.status == 401 && again.json["code"] == "invalid_token", "\(again.text)")
        }
        #expect(try first.app.adminSetupLink() == nil, "a server with an administrator makes no link")
        let rows = try first.app.database.pool.withConnection { try $0.query("SELECT 1 FROM admin_setup_tokens").count }
        #expect(rows == 0)
    }

    /// A token is checked before the password is hashed, and a malformed body is refused.
    @Test func aWrongTokenOrBodyIsRefusedWithoutHashing() throws {
        let server = try TestServer("admin_setup_refusals")
        defer { server.shutdown() }
        _ = try #require(try server.app.adminSetupLink())
        let unknown = try server.call(
            "POST", "/admin/setup",
            json: #"{"token": "\#(String(repeating: "A", count: 43))", "email": "a@example.com", "password": "\#(Self.password)"}"#)
        #expect(unknown.status == 401 && unknown.json["code"] == "invalid_token", "\(unknown.text)")
        let malformed = try server.call("POST", "/admin/setup", json: #"{"email": "a@example.com", "password": "x"}"#)
        #expect(malformed.status == 422 && malformed.json["code"] == "invalid_value", "\(malformed.text)")
        #expect(try server.app.accounts.administrators.admins().isEmpty)
    }
}
