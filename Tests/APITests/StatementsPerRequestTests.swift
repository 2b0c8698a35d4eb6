import Accounts
import Postgres
import PostgresCluster
import TestSupport
import Testing

/// What one request costs the database, counted by PostgreSQL itself (`pg_stat_statements`, on a
/// cluster of this suite's own that loads it): a request answered on an event loop runs its
/// handler once, whichever way its statements go.
@Suite(.testThreads, .serialized)
struct StatementsPerRequestTests {
    static let cluster = Result {
        var options = LocalCluster.Options()
        options.settings = ["shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track": "all"]
        return try LocalCluster.startTemporary(options: options)
    }

    /// The session lookups PostgreSQL ran in `server`'s database since the last reset.
    static func sessionLookups(_ connection: PostgresConnection) throws -> Int64 {
        try connection.query(
            """
            SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
            WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
              AND query LIKE '%FROM sessions s JOIN users u ON u.id = s.user_id%WHERE s.token_hash%'
            """)[0].decode(Int64.self, at: 0)
    }

    /// An email change needs a transaction, which the event loop's pipeline cannot run: the
    /// transaction goes to the workers, and the request is not started again there (a second
    /// session lookup, a second parse, a second validation, as it was).
    @Test(arguments: ["PUT", "PATCH"])
    func anEmailChangeOnTheLoopLooksUpItsSessionOnce(_ method: String) throws {
        let cluster = try Self.cluster.get()
        // The lookup is what is counted: no session cache.
        let server = try TestServer("statements_\(method.lowercased())", cluster: cluster) { $0.accounts.sessionCacheBytes = 0 }
        defer { server.shutdown() }
        let account = try server.register()
        try server.openPipelines(eventLoops: 1, token: account.token)
        let connection = try PostgresConnection(configuration: try PostgresConfiguration(connectionString: server.databaseURL))
        defer { connection.close() }
        try connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

        let before = try #require(try server.pipelineCounters())
        _ = try connection.query("SELECT pg_stat_statements_reset()")
        let email = server.uniqueEmail("moved")
        let body = method == "PUT" ? #"{"email": "\#(email)", "firstname": "Ayu"}"# : #"{"email": "\#(email)"}"#
        let reply = try server.call(method, "/users/me", token: account.token, json: body)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.json["pendingEmail"]?.stringValue == email)
        let ran = try #require(try server.pipelineCounters()) - before
        // The lookup ran on the pipeline, the transaction on the workers, the request itself on the loop.
        #expect(ran.sent >= 1 && ran.offloaded == 1, "\(ran)")
        #expect(try Self.sessionLookups(connection) == 1)
    }

    /// A body over the admission threshold (64 KiB) is authenticated from its head, before it is
    /// read, and that is the request's one authentication: its handler runs once, on the loop,
    /// given who the admission found, and parses the body on the worker pool.
    @Test(arguments: ["PUT", "PATCH"])
    func aLargeBodyIsAuthenticatedOnce(_ method: String) throws {
        let cluster = try Self.cluster.get()
        let server = try TestServer("statements_large_\(method.lowercased())", cluster: cluster) { $0.accounts.sessionCacheBytes = 0 }
        defer { server.shutdown() }
        let account = try server.register()
        try server.openPipelines(eventLoops: 1, token: account.token)
        let connection = try PostgresConnection(configuration: try PostgresConfiguration(connectionString: server.databaseURL))
        defer { connection.close() }
        try connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

        _ = try connection.query("SELECT pg_stat_statements_reset()")
        // Valid JSON, padded past the threshold with whitespace.
        let padding = String(repeating: " ", count: 80 * 1024)
        let body = method == "PUT" ? #"{"email": "\#(account.email)", "firstname": "Large"\#(padding)}"# : #"{"firstname": "Large"\#(padding)}"#
        let reply = try server.call(method, "/users/me", token: account.token, json: body)
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.json["firstname"]?.stringValue == "Large")
        #expect(try Self.sessionLookups(connection) == 1)
        // A bad token is refused from the head: its body is never read, and nothing is written.
        let refused = try server.call(method, "/users/me", token: String(repeating: "A", count: 43), json: body)
        #expect(refused.status == 401)
        #expect(try server.me(account.token).json["firstname"]?.stringValue == "Large")
    }

    /// With the session cache (the default), a read whose session is cached runs no statement: a
    /// read looks its session up only when the cache missed it (`exosphere_session_cache_lookups_total`),
    /// and a write of the user drops it, so the next read looks it up again.
    @Test func aCachedSessionIsReadWithoutAStatement() throws {
        let cluster = try Self.cluster.get()
        let server = try TestServer("statements_cache", cluster: cluster)
        defer { server.shutdown() }
        let account = try server.register()
        let connection = try PostgresConnection(configuration: try PostgresConfiguration(connectionString: server.databaseURL))
        defer { connection.close() }
        try connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        func misses() throws -> Int { try #require(try server.metric(#"exosphere_session_cache_lookups_total{outcome="miss"}"#)) }
        func hits() throws -> Int { try #require(try server.metric(#"exosphere_session_cache_lookups_total{outcome="hit"}"#)) }

        for round in 0..<2 {
            _ = try connection.query("SELECT pg_stat_statements_reset()")
            let (missesBefore, hitsBefore) = (try misses(), try hits())
            for _ in 0..<20 { #expect(try server.me(account.token).status == 200) }
            let (missed, hit) = (try misses() - missesBefore, try hits() - hitsBefore)
            #expect(missed + hit == 20)
            // The first read of the round missed (a new session, then a session the write dropped);
            // later ones miss only while the cache is not fresh (a loaded machine).
            #expect(missed >= 1 && hit >= 1, "round \(round): \(hit) hits, \(missed) misses")
            #expect(try Self.sessionLookups(connection) == Int64(missed), "round \(round): one lookup per miss, none per hit")
            #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "R\#(round)"}"#).status == 200)
        }
    }

    /// A flood refused by a full counter that only its window empties (guests from one address)
    /// costs the database one statement a second, not one per request: this instance answers the
    /// same keys from memory for a second after the database refused them.
    @Test func aFullGuestCounterIsAnsweredFromMemoryForASecond() throws {
        let cluster = try Self.cluster.get()
        let server = try TestServer("statements_guest_flood", cluster: cluster) {
            $0.accounts.guestsPerAddress = ThrottleRule(limit: 2, windowSeconds: 3_600)
        }
        defer { server.shutdown() }
        let connection = try PostgresConnection(configuration: try PostgresConfiguration(connectionString: server.databaseURL))
        defer { connection.close() }
        try connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        func acquisitions() throws -> Int64 {
            try connection.query(
                """
                SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
                WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) AND query LIKE '%exo_throttle_acquire%'
                """)[0].decode(Int64.self, at: 0)
        }
        _ = try connection.query("SELECT pg_stat_statements_reset()")
        let statuses = try (0..<12).map { _ in try server.send("POST", "/users/guest").status }
        #expect(statuses == [201, 201] + Array(repeating: 429, count: 10), "\(statuses)")
        #expect(try acquisitions() == 3, "two counted, one refused by the database, nine from memory")
        // A second later (by the server's clock) the database is asked again, and still refuses.
        server.advanceClock(by: 1.5)
        #expect(try server.send("POST", "/users/guest").status == 429)
        #expect(try acquisitions() == 4)
        // Its window over, the address may make guests again.
        server.advanceClock(by: 3_600)
        #expect(try server.send("POST", "/users/guest").status == 201)
    }
}
