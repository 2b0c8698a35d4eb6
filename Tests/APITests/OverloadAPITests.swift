import API
import Accounts
import Dispatch
import Glibc
import JSON
import Postgres
import PostgresCluster
import Synchronization
import TestSupport
import Testing

/// The server's overload paths, each provoked through the API on a server sized for it: a full
/// worker queue, a pipelined request that must fall back to that full pool, a full hashing pool,
/// a database pool that times out, and a database that is down. Each is answered `503` with
/// `Retry-After` and a problem `code`, and the server serves normally as soon as the pressure ends.
///
/// The pressure is held, never timed: the hashing pool by jobs of the test's own that wait for a
/// `Gate`, the database by a row lock the test holds; every wait for a state is a `waitUntil` on
/// the server's own figures or on `pg_stat_activity`.
@Suite(.testThreads, .serialized) enum OverloadAPITests {}

/// A gate the test holds shut; the threads that `wait` at it go on once it opens. Opening it is
/// idempotent, so a `defer` can open it again whatever happened.
final class OverloadGate: Sendable {
    private let opened = Atomic<Bool>(false)
    /// Entered while shut: every waiter is released by the one `leave` of `open`.
    private let shut = DispatchGroup()

    init() { shut.enter() }

    func open() {
        if !opened.exchange(true, ordering: .sequentiallyConsistent) { shut.leave() }
    }

    /// Waits until the gate opens. A gate still shut after `timeout` (its test hung, or never
    /// opened it) is a failure of the test's own, recorded here; the waiter then goes on, so that
    /// the hashing thread it holds is freed and the server can shut down.
    func wait(timeout: Duration = .seconds(300)) {
        if shut.wait(timeout: .now() + .seconds(Int(timeout.components.seconds))) == .timedOut {
            Issue.record("an OverloadGate was still shut after \(timeout): the job waiting at it gave up")
        }
    }
}

extension TestServer {
    /// Occupies the hashing pool with jobs that wait for `gate`: `busy` of them on its threads and
    /// `queued` in its queue; returns once the pool shows exactly that.
    func holdHashing(_ gate: OverloadGate, busy: Int, queued: Int) throws {
        let hashing = app.hashing
        for _ in 0..<(busy + queued) { try hashing.submit { gate.wait() } }
        try waitUntil(timeout: .seconds(30), "\(busy) held jobs on the hashing threads and \(queued) in its queue") {
            let figures = hashing.statistics
            return figures.busy == busy && figures.queued == queued
        }
    }

    /// Waits until the hashing pool has nothing running or queued.
    func waitForIdleHashing() throws {
        let hashing = app.hashing
        try waitUntil(timeout: .seconds(30), "the hashing pool to be idle") {
            let figures = hashing.statistics
            return figures.busy == 0 && figures.queued == 0
        }
    }

    /// Backends of this server's database waiting for a lock.
    func lockWaiters() throws -> Int {
        try withDatabase {
            try $0.query(
                """
                SELECT count(*)::int8 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                """)[0].decode(Int.self, at: 0)
        }
    }
}

/// What every refusal of an overload must be.
func expectOverloadAnswer(
    _ reply: Reply, code: String, retryAfter: String, _ what: String,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(reply.status == 503, "\(what): \(reply.status) \(reply.text.prefix(200))", sourceLocation: sourceLocation)
    #expect(reply.code == code, "\(what): code \(reply.code ?? "none")", sourceLocation: sourceLocation)
    #expect(
        reply.header("Retry-After") == retryAfter, "\(what): Retry-After \(reply.header("Retry-After") ?? "none")",
        sourceLocation: sourceLocation)
    #expect(reply.header("Content-Type") == "application/problem+json", "\(what)", sourceLocation: sourceLocation)
}

// MARK: - The worker pool

extension OverloadAPITests {
    /// Two workers and a queue of two: two sign-ins waiting for a hashing pool the test holds fill
    /// the workers, two `GET /users/schema` fill the queue. The event loop has its pipeline, so
    /// `GET /users/me` needs no worker.
    @Suite(
        .liveServer("overload_workers") { configuration in
            configuration.server.eventLoops = 1
            // Reads that go to the database on the loop's pipeline: no session cache.
            configuration.accounts.sessionCacheBytes = 0
            configuration.server.workerThreads = 2
            configuration.server.workerQueueLimit = 2
            configuration.hashingThreads = 1
            configuration.hashingQueue = 8
            configuration.databasePipelining = true
        }, .serialized)
    struct WorkerQueue {
        let server: TestServer
        init() throws { server = try #require(TestServer.current) }

        /// Fills the worker pool and its queue, runs `body` in that state (on a thread of its own,
        /// so it must not use `#expect`: what it returns is checked after), then lets everything go.
        /// Returns `body`'s result and the statuses of the four requests that held the pool.
        func whileTheWorkersAreFull<T: Sendable>(
            _ account: TestServer.Account,
            _ body: @escaping @Sendable () throws -> T
        ) throws -> (T, [Int]) {
            let server = self.server
            let gate = OverloadGate()
            defer { gate.open() }
            try server.holdHashing(gate, busy: 1, queued: 0)
            let held = Mutex<[Int]>([])
            let result = Mutex<T?>(nil)
            try onThreads(5) { index in
                switch index {
                case 0, 1:
                    // On a worker, waiting for the hashing thread the test holds.
                    let status = (try? server.signIn(account.email, account.password))?.status ?? -1
                    held.withLock { $0.append(status) }
                case 2, 3:
                    // Sent once the sign-ins have both workers, so that these wait in the queue.
                    try waitUntil(timeout: .seconds(30), "both sign-ins on the workers, waiting for the hashing pool") {
                        server.app.server.workerStatistics.busy == 2 && server.app.hashing.statistics.queued == 2
                    }
                    let status = (try? server.call("GET", "/users/schema", token: account.token))?.status ?? -1
                    held.withLock { $0.append(status) }
                default:
                    defer { gate.open() }
                    try waitUntil(timeout: .seconds(30), "two requests waiting in the worker queue") {
                        let workers = server.app.server.workerStatistics
                        return workers.busy == 2 && workers.queued == 2
                    }
                    let value = try body()
                    result.withLock { $0 = value }
                }
            }
            let value = try #require(result.withLock { $0 })
            return (value, held.withLock { $0 })
        }

        @Test func aFullWorkerQueueIsAnswered503AndServiceResumes() throws {
            let server = self.server
            let account = try server.register()
            try server.openPipelines(eventLoops: 1, token: account.token)
            let rejectedBefore = server.app.server.workerStatistics.rejected
            let ((refused, rejected, health, me), held) = try whileTheWorkersAreFull(account) {
                let refused = try server.call("GET", "/users/schema", token: account.token)
                let rejected = server.app.server.workerStatistics.rejected
                // What needs no worker is still answered: the inline route, and the pipelined read.
                let health = try server.call("GET", "/healthz")
                let me = try server.me(account.token)
                return (refused, rejected, health, me)
            }
            expectOverloadAnswer(refused, code: "overloaded", retryAfter: "1", "GET /users/schema with the worker queue full")
            #expect(rejected > rejectedBefore, "the refusal is counted as a worker-queue rejection")
            #expect(health.status == 200)
            #expect(me.status == 200, "a pipelined read needs no worker: \(me.status) \(me.text.prefix(200))")
            #expect(held.sorted() == [200, 200, 200, 200], "the requests that held the pool were all answered: \(held)")

            // Right after: every kind of request is served again.
            #expect(try server.call("GET", "/users/schema", token: account.token).status == 200)
            #expect(try server.signIn(account.email, account.password).status == 200)
            #expect(try server.me(account.token).status == 200)
            #expect(try server.metric("exosphere_http_worker_rejected_total") ?? 0 >= 1)
            server.acceptServerErrors(503)
        }

        /// A `PATCH /users/me` with a custom field the deployment does not know yet needs a
        /// transaction to claim its type, so the loop hands that transaction to the workers; with
        /// the pool full, the hand-over is refused with `503` (and the write does not happen),
        /// while pipelined reads go on. Once the pool is free, the same request succeeds.
        @Test func aPipelinedRequestFallingBackToAFullWorkerPoolIsAnswered503() throws {
            let server = self.server
            let account = try server.register()
            try server.openPipelines(eventLoops: 1, token: account.token)
            let field = "overflow\(UInt32.random(in: 0...UInt32.max))"
            let patch = #"{"data": {"\#(field)": 7}}"#
            let before = try #require(try server.pipelineCounters())
            let ((refused, read), held) = try whileTheWorkersAreFull(account) {
                (try server.call("PATCH", "/users/me", token: account.token, json: patch), try server.me(account.token))
            }
            let during = try #require(try server.pipelineCounters()) - before
            expectOverloadAnswer(refused, code: "overloaded", retryAfter: "1", "a pipelined PATCH falling back to a full worker pool")
            #expect(during.offloaded >= 1, "the PATCH's transaction, not the request, was handed to the workers: \(during)")
            #expect(during.sent >= 2, "its authentication and the read ran on the pipeline: \(during)")
            #expect(read.status == 200, "a pipelined read is still answered: \(read.status) \(read.text.prefix(200))")
            #expect(held.sorted() == [200, 200, 200, 200], "\(held)")
            #expect(try server.me(account.token).json["data"]?[field] == nil, "the refused write did not happen")

            // Right after: the same write falls back again, to free workers, and is done.
            let retried = try server.call("PATCH", "/users/me", token: account.token, json: patch)
            #expect(retried.status == 200, "\(retried.status) \(retried.text.prefix(200))")
            #expect(retried.json["data"]?[field]?.int64Value == 7)
            let after = try #require(try server.pipelineCounters()) - before
            #expect(after.offloaded >= during.offloaded + 1, "the retry's transaction ran on the workers too: \(after)")
            #expect(try server.me(account.token).json["data"]?[field]?.int64Value == 7)
            server.acceptServerErrors(503)
        }
    }
}

// MARK: - The hashing pool

extension OverloadAPITests {
    /// One hashing thread and a queue of one: two jobs of the test's fill it.
    @Suite(
        .liveServer("overload_hashing") { configuration in
            configuration.hashingThreads = 1
            configuration.hashingQueue = 1
        }, .serialized)
    struct HashingPoolFull {
        let server: TestServer
        init() throws { server = try #require(TestServer.current) }

        @Test func aFullHashingPoolIsAnswered503OverloadedAndServiceResumes() throws {
            let account = try server.register()
            let newPassword = server.uniquePassword("new")
            let gate = OverloadGate()
            defer { gate.open() }
            try server.holdHashing(gate, busy: 1, queued: 1)
            let hashing = server.app.hashing
            let rejectedAtStart = hashing.statistics.rejected

            // Sign-in, registration and a password change all need a hash: all refused at once
            // (were they queued, the test would wait here until the HTTP client's 30 s timeout).
            let signIn = try server.signIn(account.email, account.password)
            let rejectedAfterSignIn = hashing.statistics.rejected
            let registration = try server.call(
                "POST", "/users",
                json: #"{"email": \#(jsonString(server.uniqueEmail("refused"))), "#
                    + #""password": \#(jsonString(server.uniquePassword()))}"#)
            let change = try server.call(
                "POST", "/users/me/password", token: account.token,
                json: #"{"oldPassword": \#(jsonString(account.password)), "newPassword": \#(jsonString(newPassword))}"#)
            let rejectedAtEnd = hashing.statistics.rejected
            // Reads need no hash: served while the pool is full.
            let me = try server.me(account.token)
            #expect(hashing.statistics.busy == 1 && hashing.statistics.queued == 1, "the test's jobs still hold the pool")
            gate.open()

            expectOverloadAnswer(signIn, code: "overloaded", retryAfter: "1", "sign-in with the hashing pool full")
            expectOverloadAnswer(registration, code: "overloaded", retryAfter: "1", "registration with the hashing pool full")
            expectOverloadAnswer(change, code: "overloaded", retryAfter: "1", "password change with the hashing pool full")
            #expect(me.status == 200)
            // Each refusal is counted, the sign-in's early one (before any database work) too.
            #expect(rejectedAfterSignIn == rejectedAtStart + 1, "the refused sign-in counts in exosphere_hashing_rejected_total")
            #expect(rejectedAtEnd == rejectedAfterSignIn + 2, "the refused registration and password change count")

            // Right after: hashing works again, and the refusals cost the user nothing (no throttle,
            // the password unchanged).
            try server.waitForIdleHashing()
            #expect(try server.signIn(account.email, account.password).status == 200)
            #expect(try server.signIn(account.email, newPassword).status == 401, "the refused change changed nothing")
            _ = try server.register()
            let changed = try server.call(
                "POST", "/users/me/password", token: account.token,
                json: #"{"oldPassword": \#(jsonString(account.password)), "newPassword": \#(jsonString(newPassword))}"#)
            #expect(changed.status == 200, "\(changed.status) \(changed.text.prefix(200))")
            if let token = changed.json["accessToken"]?.stringValue { server.remember(token: token) }
            #expect(try server.signIn(account.email, newPassword).status == 200)
            server.acceptServerErrors(503)
        }
    }
}

// MARK: - The database pool

extension OverloadAPITests {
    /// One pooled connection and a short wait for it; everything on the workers (pipelining off)
    /// and no session cache, so that every request needs the pool. A statement may wait for a lock for a long time
    /// (the response timeout is not what is tested here).
    @Suite(
        .liveServer("overload_dbpool") { configuration in
            configuration.databasePipelining = false
            configuration.databasePoolSize = 1
            configuration.databaseAcquireTimeout = .milliseconds(500)
            configuration.databaseResponseTimeout = .seconds(120)
            // Reads need the pool too: no session cache.
            configuration.accounts.sessionCacheBytes = 0
        }, .serialized)
    struct DatabasePoolTimeout {
        let server: TestServer
        init() throws { server = try #require(TestServer.current) }

        @Test func aDatabasePoolThatTimesOutIsAnswered503DatabaseBusyAndServiceResumes() throws {
            let server = self.server
            let account = try server.register()
            let pool = server.app.database.pool
            let patched = Mutex<Reply?>(nil)
            let observed = Mutex<(me: Reply, schema: Reply, ready: Reply, timedOut: Int)?>(nil)
            let locked = Atomic<Bool>(false)
            let timedOutBefore = pool.statistics.timedOut
            try onThreads(2) { index in
                if index == 0 {
                    // Once the test holds the user's row, a PATCH of that user holds the pool's one
                    // connection, waiting for the lock.
                    try waitUntil(timeout: .seconds(30), "the test to lock the user's row") { locked.load(ordering: .sequentiallyConsistent) }
                    let reply = try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "Held"}"#)
                    patched.withLock { $0 = reply }
                    return
                }
                let holder = try PostgresConnection(connectionString: server.databaseURL)
                defer { holder.close() }
                _ = try holder.execute("BEGIN")
                defer { _ = try? holder.execute("ROLLBACK") }
                _ = try holder.query("SELECT 1 FROM users WHERE id = \(account.id)::uuid FOR UPDATE")
                locked.store(true, ordering: .sequentiallyConsistent)
                try waitUntil(timeout: .seconds(30), "the PATCH to hold the pool's connection, waiting for the row lock") {
                    try server.lockWaiters() >= 1 && pool.statistics.inUse == 1
                }
                let me = try server.me(account.token)
                let schema = try server.call("GET", "/users/schema", token: account.token)
                let ready = try server.call("GET", "/readyz")
                observed.withLock { $0 = (me, schema, ready, pool.statistics.timedOut) }
            }
            let (me, schema, ready, timedOut) = try #require(observed.withLock { $0 })
            expectOverloadAnswer(me, code: "database_busy", retryAfter: "1", "GET /users/me with the database pool exhausted")
            expectOverloadAnswer(schema, code: "database_busy", retryAfter: "1", "GET /users/schema with the database pool exhausted")
            #expect(timedOut >= timedOutBefore + 2, "the waits are counted as pool timeouts")
            #expect(ready.status == 200, "a busy pool is not an unready database: \(ready.status) \(ready.code ?? "")")

            // The held PATCH went through once the lock was released; everything is served again.
            let patch = try #require(patched.withLock { $0 })
            #expect(patch.status == 200, "\(patch.status) \(patch.text.prefix(200))")
            let after = try server.me(account.token)
            #expect(after.status == 200)
            #expect(after.json["firstname"]?.stringValue == "Held")
            #expect(try server.call("GET", "/users/schema", token: account.token).status == 200)
            #expect(try server.call("GET", "/readyz").status == 200)
            #expect(try server.metric("exosphere_db_pool_connections_timeouts_total") ?? 0 >= 2)
            server.acceptServerErrors(503)
        }
    }
}

// MARK: - The database down

extension OverloadAPITests {
    @Suite struct Readiness {
        /// `/readyz` follows the database: `200` while it answers, `503 not_ready` with
        /// `Retry-After` while it is stopped (the process itself stays healthy), `200` again once
        /// it is back, and then reads and writes are served at once.
        @Test func readyzAnswers503WhileTheDatabaseIsDownAnd200OnceItIsBack() throws {
            let cluster = try LocalCluster.startTemporary()
            defer { cluster.stop() }
            let server = try TestServer("readyz_outage", cluster: cluster) { configuration in
                configuration.databaseAcquireTimeout = .seconds(2)
                configuration.databaseResponseTimeout = .seconds(2)
            }
            var stopped = false
            defer { if !stopped { server.shutdown() } }
            let account = try server.register()
            try server.openPipelines(eventLoops: 1, token: account.token)
            let ready = try server.call("GET", "/readyz")
            #expect(ready.status == 200)
            #expect(ready.json["status"]?.stringValue == "ready")

            cluster.stopServer(mode: .fast)
            var down: Reply?
            try waitUntil(timeout: .seconds(30), "/readyz to answer 503 with the database stopped") {
                down = try server.call("GET", "/readyz")
                return down?.status == 503
            }
            expectOverloadAnswer(try #require(down), code: "not_ready", retryAfter: "5", "/readyz with the database stopped")
            #expect(try server.call("GET", "/healthz").status == 200, "the process itself is healthy")
            let read = try server.me(account.token)
            #expect(read.status == 503, "a read with the database stopped: \(read.status)")
            #expect(read.header("Retry-After") != nil)

            try cluster.startServer()
            try waitUntil(timeout: .seconds(60), pollingEvery: .milliseconds(100), "/readyz to answer 200 once the database is back") {
                try server.call("GET", "/readyz").status == 200
            }
            // Ready means ready: reads and writes are served at once, without a retry.
            let me = try server.me(account.token)
            #expect(me.status == 200, "the first read after /readyz said ready: \(me.status) \(me.text.prefix(200))")
            let put = try server.call(
                "PUT", "/users/me", token: account.token, json: #"{"email": \#(jsonString(account.email)), "firstname": "Back"}"#)
            #expect(put.status == 200, "the first write after /readyz said ready: \(put.status) \(put.text.prefix(200))")
            #expect(try server.me(account.token).json["firstname"]?.stringValue == "Back")
            #expect(try server.signIn(account.email, account.password).status == 200)

            server.acceptServerErrors(503)
            server.shutdown()
            stopped = true
            let leaks = server.leaks()
            #expect(leaks.isEmpty, "log kept at \(server.logPath): \(leaks.joined(separator: "; "))")
            if leaks.isEmpty { unlink(server.logPath) }
        }
    }
}
