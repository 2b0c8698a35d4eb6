@testable import API
import Glibc
import HTTP
import HTTPServer
import StructuredLogging
import Synchronization
import TestSupport
import Testing
import Postgres
import PostgresCluster
import Foundation

/// `GET path` over a fresh connection with `Connection: close`: status, the header lines and the body.
func httpGet(port: Int, path: String) throws -> (status: Int, head: String, body: String) {
    let reply = try HTTPClient.send(port: port, method: "GET", target: path, headers: [], body: nil)
    return (
        reply.status, reply.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\r\n"),
        String(decoding: reply.body, as: UTF8.self)
    )
}

@Suite(.testThreads) struct ApplicationTests {
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
            #expect(route.execution == .loop)
        } else {
            Issue.record("GET /healthz is not routed")
        }
        if case .found(let route, _) = application.server.router.match(method: .get, path: "/users/me") {
            #expect(route.execution == .loop)
        } else {
            Issue.record("GET /users/me is not routed")
        }
    }

    /// `--db-pipelining` (on by default): `GET /users/me` is answered on the event loops through
    /// their pipelined connections; everything that hashes or writes still goes to the workers.
    /// Concurrent clients on several loops each get their own user.
    @Test func pipelinedReadsAnswerEachClientWithItsOwnUser() throws {
        let server = try TestServer("pipelinedreads") { $0.server.eventLoops = 3 }
        defer { server.shutdown() }
        let router = server.app.server.router
        for (method, path, asynchronous) in [
            (HTTPMethod.get, "/users/me", true), (.put, "/users/me", true), (.patch, "/users/me", true), (.post, "/users/me/password", false),
            (.post, "/users/signin", false), (.post, "/users", false),
        ] {
            if case .found(let route, _) = router.match(method: method, path: path) {
                #expect((route.execution == .loop) == asynchronous, "\(method) \(path)")
            } else {
                Issue.record("\(method) \(path) is not routed")
            }
        }
        let accounts = try (0..<6).map { _ in try server.register() }
        let wrong = Atomic<Int>(0)
        onThreads(accounts.count) { index in
            let account = accounts[index]
            for _ in 0..<40 {
                guard let me = try? server.me(account.token), me.status == 200, me.json["id"]?.stringValue == account.id else {
                    wrong.add(1, ordering: .relaxed)
                    continue
                }
            }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(try server.me("not-a-token").status == 401)
        #expect(try server.me(String(repeating: "A", count: 43)).status == 401)
        #expect(try server.pipelineBackends() >= 1)
    }

    /// A pipelined connection that dies (a database restart, say) costs no request: they fall back
    /// to the worker pool, and the loop opens a new connection after a short back-off.
    @Test func pipelinedReadsSurviveTheirConnectionsDeath() throws {
        let server = try TestServer("pipelinedeath") { $0.accounts.sessionCacheBytes = 0 }  // reads through the pipelines
        defer { server.shutdown() }
        let account = try server.register()
        #expect(try server.me(account.token).status == 200)
        // The first read opened it in the background.
        try waitUntil(timeout: .seconds(30), "the pipeline to open") { try server.pipelineBackends() > 0 }
        #expect(try server.pipelineBackends() == 1)
        #expect(try server.terminatePipelineBackends() == 1)
        for _ in 0..<50 {
            let me = try server.me(account.token)
            #expect(me.status == 200)
            #expect(me.json["id"]?.stringValue == account.id)
        }
        // Reads go on (one opens a new pipeline once the back-off has passed) until it is there.
        try waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(100), "a new pipeline") {
            #expect(try server.me(account.token).status == 200)
            return try server.pipelineBackends() == 1
        }
        for _ in 0..<5 { #expect(try server.me(account.token).status == 200) }
        #expect(try server.metric("exosphere_db_pipelines_open") == 1)
        #expect(try server.metric("exosphere_db_pipelined_queries_total") ?? 0 > 0)
        // At least the first read ever and the reads while the connection was down ran on the
        // workers' connections, each request's handler still running once, on its loop.
        #expect(try server.metric("exosphere_db_pipeline_offloaded_total") ?? 0 >= 2)
    }

    /// PostgreSQL crashes, stays down a while, and comes back: during the outage reads and writes
    /// get `503`, never anything else; then the pool and the event loops' pipelines reconnect by
    /// themselves. No write answered `200` is lost.
    @Test func aDatabaseRestartCostsOnlyTheRequestsDuringIt() throws {
        // Durable, unlike the other tests' cluster: a crash must not lose what was acknowledged.
        var options = LocalCluster.Options()
        options.settings["fsync"] = "on"
        options.settings["synchronous_commit"] = "on"
        options.settings["full_page_writes"] = "on"
        let cluster = try LocalCluster.startTemporary(options: options)
        defer { cluster.stop() }
        let server = try TestServer("dbrestart", cluster: cluster) { $0.server.eventLoops = 2 }
        defer { server.shutdown() }
        let account = try server.register()
        func put(_ n: Int) throws -> Int {
            try server.call(
                "PUT", "/users/me", token: account.token,
                json: #"{"email": "\#(account.email)", "data": {"weight": \#(n)}}"#
            ).status
        }
        for n in 1...5 {
            #expect(try server.me(account.token).status == 200)
            #expect(try put(n) == 200)
        }
        cluster.stopServer(mode: .immediate)
        // Down: every read and write is a 503, at once.
        for n in 6...10 {
            #expect(try server.me(account.token).status == 503)
            #expect(try put(n) == 503)
        }
        try cluster.startServer()
        var statuses: [Int] = []
        var acknowledged = 5
        var healthy = 0
        var n = 10
        let deadline = ContinuousClock.now + .seconds(20)
        while healthy < 3, ContinuousClock.now < deadline {
            n += 1
            let read = try server.me(account.token).status
            let write = try put(n)
            if write == 200 { acknowledged = n }
            statuses += [read, write]
            healthy = read == 200 && write == 200 ? healthy + 1 : 0
            if healthy == 0 { usleep(50_000) }
        }
        server.acceptServerErrors(503)
        #expect(healthy == 3, "not recovered: \(statuses.suffix(10))")
        #expect(statuses.allSatisfy { $0 == 200 || $0 == 503 }, "\(statuses)")
        #expect(try server.me(account.token).json["data"]?["weight"]?.int64Value == Int64(acknowledged))
        try waitUntil(timeout: .seconds(30), "the loops to open new pipelines") { try server.pipelineBackends() >= 1 }
    }

    @Test func pipeliningOffAnswersFromTheWorkers() throws {
        let server = try TestServer("pipeliningoff") { $0.databasePipelining = false }
        defer { server.shutdown() }
        if case .found(let route, _) = server.app.server.router.match(method: .get, path: "/users/me") {
            #expect(route.execution == .workers)
        }
        let account = try server.register()
        #expect(try server.me(account.token).json["id"]?.stringValue == account.id)
        #expect(try server.pipelineBackends() == 0)
    }
}
