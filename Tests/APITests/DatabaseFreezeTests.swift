import Foundation
import Glibc
import Postgres
import PostgresCluster
import Synchronization
import TestSupport
import Testing

/// A PostgreSQL that stops answering without going away (its processes stopped with `SIGSTOP`,
/// as in a partition or a stalled failover): every request that needs it is answered `503`
/// within the response timeout, on the event loops' pipelines and on the worker pool alike, and
/// service resumes by itself once it answers again (`SIGCONT`).
@Suite(.testThreads, .drill, .serialized) struct DatabaseFreezeTests {
    @Test(arguments: [true, false])
    func aFrozenDatabaseIsAnswered503WithinTheTimeoutAndServiceResumes(pipelining: Bool) throws {
        let cluster = try LocalCluster.startTemporary()
        defer { cluster.stop() }
        let server = try TestServer("freeze_\(pipelining ? "loops" : "pool")", cluster: cluster) { configuration in
            configuration.databasePipelining = pipelining
            configuration.databaseResponseTimeout = .seconds(2)
            configuration.databaseAcquireTimeout = .seconds(2)
            configuration.server.eventLoops = 2
        }
        defer { server.shutdown() }
        let account = try server.register()
        @Sendable func put(_ n: Int) throws -> Reply {
            try server.call("PUT", "/users/me", token: account.token, json: #"{"email": "\#(account.email)", "data": {"weight": \#(n)}}"#)
        }
        for n in 1...3 {
            #expect(try server.me(account.token).status == 200)
            #expect(try put(n).status == 200)
        }

        // Stopped until no process of the cluster is left running: a backend forked while the
        // list was read would escape the freeze and keep, say, the session cache's feed fresh.
        var frozen: [pid_t] = []
        while case let running = cluster.processIDs().filter({ !frozen.contains($0) }), !running.isEmpty {
            for pid in running { kill(pid, SIGSTOP) }
            frozen += running
        }
        try #require(frozen.count > 1)
        var thawed = false
        defer { if !thawed { for pid in frozen { kill(pid, SIGCONT) } } }

        // Four clients, each sending reads and writes one after another for 6 s of freeze.
        let answers = Mutex<[(status: Int, seconds: Double, retryAfter: Bool)]>([])
        let freezeStart = ContinuousClock.now
        onThreads(4) { index in
            var n = 100 * index
            while ContinuousClock.now - freezeStart < .seconds(6) {
                n += 1
                let start = ContinuousClock.now
                let reply = n % 2 == 0 ? try? server.me(account.token) : try? put(n)
                let elapsed = (ContinuousClock.now - start).inSeconds
                answers.withLock { $0.append((reply?.status ?? -1, elapsed, reply?.header("Retry-After") != nil)) }
            }
        }
        for pid in frozen { kill(pid, SIGCONT) }
        thawed = true
        server.acceptServerErrors(503)

        let during = answers.withLock { $0 }
        #expect(during.count >= 8, "\(during.count) answers in 6 s")
        #expect(during.allSatisfy { $0.status == 503 && $0.retryAfter }, "\(during.map(\.status))")
        let slowest = during.map(\.seconds).max() ?? 0
        let sorted = during.map(\.seconds).sorted()
        print(
            "frozen database, pipelining \(pipelining): \(during.count) answers in 6 s, statuses \(Set(during.map(\.status))), "
                + "median \(sorted.isEmpty ? 0 : sorted[sorted.count / 2]) s, slowest \(slowest) s")
        // The timeout (2 s), plus a loop's tick (250 ms) for a pipelined read, plus scheduling.
        #expect(slowest < 3.5, "the slowest answer during the freeze took \(slowest) s")

        // Thawed: reads and writes work again without a restart.
        var healthy = 0
        var statuses: [Int] = []
        var n = 1_000
        let deadline = ContinuousClock.now + .seconds(30)
        while healthy < 3, ContinuousClock.now < deadline {
            n += 1
            let read = try server.me(account.token).status
            let write = try put(n).status
            statuses += [read, write]
            healthy = read == 200 && write == 200 ? healthy + 1 : 0
            if healthy == 0 { usleep(100_000) }
        }
        #expect(healthy == 3, "not recovered: \(statuses.suffix(10))")
        #expect(try server.me(account.token).json["data"]?["weight"]?.int64Value == Int64(n))
        if pipelining {
            for _ in 0..<100 where try server.pipelineBackends() < 1 { usleep(100_000) }
            #expect(try server.pipelineBackends() >= 1, "the loops opened new pipelines")
        }
    }
}
