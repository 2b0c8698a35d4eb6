import TestSupport
import API
import Glibc
import JSON
import Synchronization
import Testing

/// `PUT` and `PATCH /users/me` on the event loops: the writes of one wake-up are committed together, each
/// reported only once committed; a failing one sends the others of its batch to the workers.
// Reads through the pipelines, so no session cache (its hits skip them).
@Suite(
    .testThreads,
    .liveServer("pipelinedwrites") {
        $0.server.eventLoops = 2
        $0.accounts.sessionCacheBytes = 0
    }, .serialized)
struct PipelinedWritesTests {
    /// As the trait above configures.
    static let eventLoops = 2
    let server: TestServer

    init() throws { server = try #require(TestServer.current) }

    /// The counters once both loops have their pipelines open (`account` reads to open them).
    func countersWithPipelinesOpen(_ account: TestServer.Account) throws -> PipelineCounters {
        try server.openPipelines(eventLoops: Self.eventLoops, token: account.token)
        return try #require(try server.pipelineCounters())
    }

    static func body(_ email: String, height: Int) -> String {
        #"{"email": "\#(email)", "firstname": "F\#(height)", "data": {"height": \#(height).5}}"#
    }

    /// Many users writing at once each get their own representation back, and it is what is stored.
    @Test func concurrentWritesOfManyUsersAreEachCommitted() throws {
        let server = server
        let accounts = try (0..<8).map { _ in try server.register(extra: #", "data": {"height": 1.5}"#) }
        let writes = 25
        let before = try countersWithPipelinesOpen(accounts[0])
        let wrong = Atomic<Int>(0)
        onThreads(accounts.count) { index in
            let account = accounts[index]
            for height in 1...writes {
                guard let reply = try? server.call("PUT", "/users/me", token: account.token, json: Self.body(account.email, height: height)),
                    reply.status == 200, reply.json["id"]?.stringValue == account.id,
                    reply.json["data"]?["height"]?.doubleValue == Double(height) + 0.5
                else {
                    wrong.add(1, ordering: .relaxed)
                    continue
                }
            }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
        // With both loops' pipelines open, every write ran on them: a lookup and an UPDATE each,
        // and none went to the workers (no write failed, and "height" has a known type).
        let ran = try #require(try server.pipelineCounters()) - before
        #expect(ran.sent >= 2 * accounts.count * writes, "\(ran) for \(accounts.count * writes) writes")
        #expect(ran.offloaded == 0, "\(ran) for \(accounts.count * writes) writes")
        for account in accounts {
            let me = try server.me(account.token).json
            #expect(me["firstname"]?.stringValue == "F25")
            #expect(me["data"]?["height"]?.doubleValue == 25.5)
        }
    }

    /// Concurrent merge patches of one user, each of its own field: a patch that finds the user
    /// changed since its lookup is merged again by the workers, so none is lost.
    @Test func concurrentPatchesOfOneUserAllSurvive() throws {
        let server = server
        let account = try server.register()
        let before = try countersWithPipelinesOpen(account)
        let failures = Atomic<Int>(0)
        onThreads(6) { index in
            for round in 1...20 {
                let reply = try? server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"p\#(index)": \#(round)}}"#)
                if reply?.status != 200 { failures.add(1, ordering: .relaxed) }
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        // Each patch began on a pipeline (its lookup at least); those that lost a race, or
        // wrote a field of a new type, were finished by the workers.
        let ran = try #require(try server.pipelineCounters()) - before
        #expect(ran.sent >= 6 * 20, "\(ran) for \(6 * 20) patches")
        print("PipelinedWritesTests: 120 concurrent patches of one user: \(ran)")
        let data = try server.me(account.token).json["data"]
        for index in 0..<6 { #expect(data?["p\(index)"]?.int64Value == 20, "p\(index)") }
    }

    /// A write that the database refuses, sent with five others: it fails alone, and the writes
    /// that shared its batch still land (through the workers when it was rolled back). The refusal
    /// is a unique violation raised by a trigger the test adds for the while, answered `409` like
    /// a taken address (a change of address, the conflict this test used before, is no longer
    /// written at once, so no profile write can conflict on it any more).
    @Test func aRefusedWriteRollsBackItsBatchButLosesNoOtherWrite() throws {
        let server = server
        try server.withDatabase { connection in
            _ = try connection.execute(
                """
                CREATE FUNCTION pipelined_writes_poison() RETURNS trigger LANGUAGE plpgsql AS
                $$ BEGIN RAISE unique_violation USING MESSAGE = 'refused by PipelinedWritesTests'; END $$
                """)
            _ = try connection.execute(
                """
                CREATE TRIGGER pipelined_writes_poison BEFORE UPDATE ON users FOR EACH ROW
                WHEN (NEW.firstname = 'poison') EXECUTE FUNCTION pipelined_writes_poison()
                """)
        }
        defer {
            _ = try? server.withDatabase { connection in
                try connection.execute("DROP TRIGGER pipelined_writes_poison ON users")
                try connection.execute("DROP FUNCTION pipelined_writes_poison()")
            }
        }
        var ran = PipelineCounters(sent: 0, offloaded: 0)
        for round in 0..<10 {
            let accounts = try (0..<6).map { _ in try server.register() }
            let before = try countersWithPipelinesOpen(accounts[0])
            let statuses = Mutex<[Int]>([])
            let barrier = Barrier(accounts.count)
            try onThreads(accounts.count) { index in
                let account = accounts[index]
                let body = index == 0 ? #"{"email": "\#(account.email)", "firstname": "poison"}"# : Self.body(account.email, height: round)
                try barrier.arrive()
                let status = (try? server.call("PUT", "/users/me", token: account.token, json: body))?.status ?? 0
                statuses.withLock { $0.append(index == 0 ? -status : status) }
            }
            let all = statuses.withLock { $0 }
            #expect(all.filter { $0 > 0 }.allSatisfy { $0 == 200 }, "round \(round): \(all)")
            #expect(all.filter { $0 < 0 } == [-409], "round \(round): \(all)")
            let after = try #require(try server.pipelineCounters())
            #expect(try server.me(accounts[0].token).json["firstname"] == "", "round \(round): the refused write changed nothing")
            for account in accounts[1...] {
                #expect(try server.me(account.token).json["firstname"]?.stringValue == "F\(round)")
            }
            // Every write began on a pipeline (its lookup at least).
            #expect((after - before).sent >= accounts.count, "round \(round): \(after - before)")
            ran.sent += (after - before).sent
            ran.offloaded += (after - before).offloaded
        }
        print("PipelinedWritesTests: 10 rounds of 6 writes, 1 of them refused by the database: \(ran)")
    }

    /// The pipelined connections die again and again while users write: every write answered
    /// `200` is stored, and no answer is anything but `200` or `503` (outcome unknown: the
    /// connection died before the commit was confirmed).
    @Test func noWriteIsAcknowledgedThatIsNotCommitted() throws {
        let server = server
        let accounts = try (0..<6).map { _ in try server.register(extra: #", "data": {"height": 0.5}"#) }
        // Per user: the height of the last write answered 200, and the heights answered 503 after it.
        let outcomes = Mutex<[(acknowledged: Int, unknown: [Int], other: [Int])]>(Array(repeating: (0, [], []), count: accounts.count))
        let finished = Atomic<Int>(0)
        let killed = Atomic<Int>(0)
        let before = try countersWithPipelinesOpen(accounts[0])
        onThreads(accounts.count + 1) { index in
            guard index < accounts.count else {
                while finished.load(ordering: .relaxed) < accounts.count {
                    usleep(150_000)
                    killed.add((try? server.terminatePipelineBackends()) ?? 0, ordering: .relaxed)
                }
                return
            }
            let account = accounts[index]
            for height in 1...150 {
                let status = (try? server.call("PUT", "/users/me", token: account.token, json: Self.body(account.email, height: height)))?.status ?? 0
                outcomes.withLock { outcomes in
                    switch status {
                    case 200:
                        outcomes[index].acknowledged = height
                        outcomes[index].unknown = []
                    case 503: outcomes[index].unknown.append(height)
                    default: outcomes[index].other.append(status)
                    }
                }
            }
            finished.add(1, ordering: .relaxed)
        }
        server.acceptServerErrors(503)
        let final = outcomes.withLock { $0 }
        // The writes went through pipelines that were ended under them, again and again.
        #expect(killed.load(ordering: .relaxed) >= 3)
        let ran = try #require(try server.pipelineCounters()) - before
        #expect(ran.sent > 300, "\(ran)")
        // ...and statements that came while a loop had none ran on the workers' connections.
        #expect(ran.offloaded > 0, "\(ran)")
        print("PipelinedWritesTests: 900 writes while pipelines were killed \(killed.load(ordering: .relaxed)) times: \(ran)")
        for (index, account) in accounts.enumerated() {
            #expect(final[index].other.isEmpty, "statuses other than 200 and 503: \(final[index].other)")
            #expect(final[index].acknowledged > 0)
            let stored = try server.me(account.token).json["data"]?["height"]?.doubleValue.map { Int($0) } ?? -1
            #expect(
                stored == final[index].acknowledged || final[index].unknown.contains(stored),
                "stored \(stored), acknowledged \(final[index].acknowledged), unknown \(final[index].unknown)")
        }
    }
}
