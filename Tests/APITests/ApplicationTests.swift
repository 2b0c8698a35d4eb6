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
    }
}
