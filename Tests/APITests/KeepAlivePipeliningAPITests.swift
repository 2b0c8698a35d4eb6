import TestSupport
import API
import Glibc
import JSON
import Synchronization
import SocketClient
import Testing

/// Keep-alive connections, one user each, that send many `GET`, `PUT` and `PATCH /users/me`
/// back to back in one write (HTTP/1.1 pipelining) from several threads at once, on a server
/// with several event loops: every connection gets its answers in order, each with its own
/// user, each write visible in what follows it; with the database pipelines on and off.
@Suite(.testThreads, .serialized)
struct KeepAlivePipeliningAPITests {
    static let eventLoops = 4
    static let connections = 6
    static let requestsPerConnection = 30
    /// The methods in turn; connection `c` starts at `c`, so that the connections differ.
    static let pattern = ["GET", "PUT", "GET", "PATCH", "PATCH", "GET", "PUT", "PATCH", "GET", "GET"]

    /// What a user's profile should be after each request: the client's model of it.
    struct Profile: Equatable {
        var firstname: String
        var lastname: String
        var data: [String: Int64]

        init(firstname: String, lastname: String, data: [String: Int64]) {
            self.firstname = firstname
            self.lastname = lastname
            self.data = data
        }

        /// From a user's representation; nil when it is not one (or has other than integer fields).
        init?(_ json: JSONValue) {
            guard let firstname = json["firstname"]?.stringValue, let lastname = json["lastname"]?.stringValue,
                let object = json["data"]?.objectValue
            else { return nil }
            var data: [String: Int64] = [:]
            for (key, value) in object {
                guard let number = value.int64Value else { return nil }
                data[key] = number
            }
            self.init(firstname: firstname, lastname: lastname, data: data)
        }
    }

    /// One request of connection `connection` and the profile it leaves.
    static func request(
        _ index: Int, connection: Int, account: TestServer.Account, port: Int,
        profile: inout Profile
    ) -> (method: String, bytes: [UInt8]) {
        let method = pattern[(index + connection) % pattern.count]
        var body: String?
        switch method {
        case "PUT":
            profile = Profile(firstname: "F\(connection)-\(index)", lastname: "PL\(index)", data: ["kaSeq": Int64(index)])
            body =
                #"{"email": \#(jsonString(account.email)), "firstname": "F\#(connection)-\#(index)", "lastname": "PL\#(index)", "#
                + #""data": {"kaSeq": \#(index)}}"#
        case "PATCH":
            profile.lastname = "L\(connection)-\(index)"
            profile.data["kaP\(index % 3)"] = Int64(index)
            profile.data["kaSeq"] = nil
            body = #"{"lastname": "L\#(connection)-\#(index)", "data": {"kaP\#(index % 3)": \#(index), "kaSeq": null}}"#
        default:
            break
        }
        var head = "\(method) /users/me HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAuthorization: Bearer \(account.token)\r\n"
        if let body { head += "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n" }
        return (method, Array((head + "\r\n" + (body ?? "")).utf8))
    }

    /// The version of a profile ETag (`"<first 8 hex digits of the id>-<version>"`) if it is the user's.
    static func version(_ etag: String?, of account: TestServer.Account) -> Int? {
        guard let etag, etag.hasPrefix("\"\(account.id.lowercased().prefix(8))-"), etag.hasSuffix("\"") else { return nil }
        return Int(etag.dropFirst(10).dropLast())
    }

    @Test(arguments: [true, false])
    func pipelinedRequestsOnKeepAliveConnectionsAreAnsweredInOrder(pipelining: Bool) throws {
        let server = try TestServer("keepalive_\(pipelining ? "loops" : "pool")") { configuration in
            configuration.server.eventLoops = Self.eventLoops
            configuration.databasePipelining = pipelining
            // Every read goes to the database, through the pipelines or the pool: no session cache.
            configuration.accounts.sessionCacheBytes = 0
        }
        var stopped = false
        defer { if !stopped { server.shutdown() } }
        // The custom fields exist (and, from the second registration on, their types are known),
        // so that no write needs a transaction to claim a type.
        let accounts = try (0..<Self.connections).map { connection in
            try server.register(extra: #", "firstname": "U\#(connection)", "data": {"kaSeq": 0, "kaP0": 0, "kaP1": 0, "kaP2": 0}"#)
        }
        if pipelining { try server.openPipelines(eventLoops: Self.eventLoops, token: accounts[0].token) }
        let before = try server.pipelineCounters()
        #expect((before == nil) == !pipelining, "pipeline metrics exist exactly when pipelining is on")

        let port = server.port
        let problems = Mutex<[String]>([])
        let barrier = Barrier(Self.connections)
        try onThreads(Self.connections) { connection in
            let account = accounts[connection]
            guard var profile = Profile(account.user) else { throw TestFailure("the registration's user: \(account.user)") }
            var requests: [(method: String, expected: Profile)] = []
            var bytes: [UInt8] = []
            for index in 0..<Self.requestsPerConnection {
                let (method, request) = Self.request(index, connection: connection, account: account, port: port, profile: &profile)
                requests.append((method, profile))
                bytes += request
            }
            let stream = try HTTPClientConnection(port: port)
            try barrier.arrive()
            try stream.send(bytes)

            var lastVersion: Int?
            func problem(_ text: String) { problems.withLock { $0.append("connection \(connection): \(text)") } }
            for (index, request) in requests.enumerated() {
                let response = try stream.readResponse()
                let reply = Reply(status: response.status, headers: response.headers, body: response.body)
                let what = "response \(index) (\(request.method))"
                guard reply.status == 200 else {
                    problem("\(what): status \(reply.status) \(reply.text.prefix(200))")
                    continue
                }
                if reply.header("Connection")?.lowercased() == "close" { problem("\(what): Connection: close") }
                let json = reply.json
                if json["id"]?.stringValue != account.id || json["email"]?.stringValue != account.email {
                    problem("\(what): another user's answer: \(json["id"]?.stringValue ?? "-") \(json["email"]?.stringValue ?? "-")")
                }
                let got = Profile(json)
                if got != request.expected {
                    problem("\(what): \(got.map { "\($0)" } ?? reply.text.prefix(200).description), expected \(request.expected)")
                }
                guard let version = Self.version(reply.header("ETag"), of: account) else {
                    problem("\(what): ETag \(reply.header("ETag") ?? "none") is not this user's")
                    continue
                }
                if let lastVersion {
                    if request.method == "GET", version != lastVersion {
                        problem("\(what): version \(version) after \(lastVersion), with no write between")
                    }
                    if request.method != "GET", version <= lastVersion {
                        problem("\(what): version \(version) after \(lastVersion), for a write")
                    }
                }
                lastVersion = version
            }
        }
        let found = problems.withLock { $0 }
        #expect(found.isEmpty, "\(found.count) problems: \(found.prefix(10).joined(separator: "; "))")

        let total = Self.connections * Self.requestsPerConnection
        if pipelining {
            let after = try #require(try server.pipelineCounters())
            let ran = after - (before ?? after)
            // A request whose lookup did not run on the workers sent it on a pipeline.
            #expect(ran.sent > 0, "\(ran)")
            #expect(ran.sent >= total - ran.offloaded, "\(ran) for \(total) requests")
            print(
                "KeepAlivePipeliningAPITests: \(total) requests on \(Self.connections) keep-alive connections, "
                    + "\(Self.eventLoops) event loops, pipelining on: \(ran)")
        } else {
            #expect(try server.pipelineCounters() == nil)
            #expect(try server.pipelineBackends() == 0)
            print(
                "KeepAlivePipeliningAPITests: \(total) requests on \(Self.connections) keep-alive connections, "
                    + "\(Self.eventLoops) event loops, pipelining off: all on the worker pool")
        }
        // After all that, each user is what its connection's last request left.
        for (connection, account) in accounts.enumerated() {
            var profile = try #require(Profile(account.user))
            for index in 0..<Self.requestsPerConnection {
                _ = Self.request(index, connection: connection, account: account, port: port, profile: &profile)
            }
            #expect(Profile(try server.me(account.token).json) == profile, "connection \(connection)")
        }

        server.shutdown()
        stopped = true
        let leaks = server.leaks()
        #expect(leaks.isEmpty, "log kept at \(server.logPath): \(leaks.joined(separator: "; "))")
        if leaks.isEmpty { unlink(server.logPath) }
    }
}
