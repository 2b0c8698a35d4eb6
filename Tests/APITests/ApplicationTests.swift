@testable import API
import Glibc
import HTTP
import HTTPServer
import Logging
import Testing
import Postgres
import Foundation

/// `GET path` over a fresh connection with `Connection: close`: status, the header lines and the body.
func httpGet(port: Int, path: String) throws -> (status: Int, head: String, body: String) {
    let reply = try HTTPClient.send(port: port, method: "GET", target: path, headers: [], body: nil)
    return (reply.status, reply.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\r\n"),
            String(decoding: reply.body, as: UTF8.self))
}

@Suite struct ApplicationTests {
    @Test func servesHealthzOnAnEphemeralPortAndShutsDown() throws {
        let server = try TestServer("application") { $0.server.workerThreads = 2 }
        defer { server.shutdown() }
        let application = server.app
        let port = server.port
        #expect(port > 0)
        let health = try httpGet(port: port, path: "/healthz")
        #expect(health.status == 200)
        #expect(health.body == #"{"status":"ok"}"#)
        #expect(health.head.contains("Content-Type: application/json"))
        #expect(health.head.contains("Connection: close"))
        #expect(try httpGet(port: port, path: "/healthz/").status == 404)
        let ready = try httpGet(port: port, path: "/readyz")
        #expect(ready.status == 200)
        #expect(ready.body == #"{"status":"ready"}"#)
        if case .found(let route, _) = application.server.router.match(method: .get, path: "/healthz") {
            #expect(route.execution == .inline)
        } else {
            Issue.record("GET /healthz is not routed")
        }
        if case .found(let route, _) = application.server.router.match(method: .get, path: "/users/me") {
            #expect(route.execution == .blocking)
        } else {
            Issue.record("GET /users/me is not routed")
        }
    }

    /// `--db-reads-on-event-loops`: `GET /users/me` answers from the event loops, everything that
    /// hashes or writes still goes to the workers.
    @Test func databaseReadsOnEventLoops() throws {
        let server = try TestServer("dbreadsonloops") {
            $0.databaseReadsOnEventLoops = true
            $0.server.eventLoops = 3
        }
        defer { server.shutdown() }
        let router = server.app.server.router
        for (method, path, execution) in [(HTTPMethod.get, "/users/me", Router.Execution.inline), (.put, "/users/me", .blocking),
                                          (.post, "/users/signin", .blocking), (.post, "/users", .blocking)] {
            if case .found(let route, _) = router.match(method: method, path: path) {
                #expect(route.execution == execution, "\(method) \(path)")
            } else {
                Issue.record("\(method) \(path) is not routed")
            }
        }
        let account = try server.register()
        for _ in 0..<20 {
            let me = try server.me(account.token)
            #expect(me.status == 200)
            #expect(me.json["id"]?.stringValue == account.id)
        }
        #expect(try server.me("not-a-token").status == 401)
    }
}
