import Foundation
import Glibc
import PostgresCluster
import TestSupport
import Testing

/// A request has one deadline (`--request-timeout`) that every wait of it honours: during an
/// outage the server's answer is a `503` with `Retry-After` by then, whatever each wait's own
/// bound (here 20 s for a connection and for each answer, as a proxy's 5 s would not allow).
@Suite(.testThreads, .serialized) struct RequestDeadlineTests {
    @Test func aSignInAgainstAFrozenDatabaseIsAnswered503ByTheRequestsDeadline() throws {
        let cluster = try LocalCluster.startTemporary()
        defer { cluster.stop() }
        let server = try TestServer("deadline_signin", cluster: cluster) { configuration in
            configuration.databaseResponseTimeout = .seconds(20)
            configuration.databaseAcquireTimeout = .seconds(20)
            configuration.databasePoolSize = 2
            configuration.server.requestDeadline = .seconds(2)
        }
        defer { server.shutdown() }
        let account = try server.register()
        #expect(try server.signIn(account.email, account.password).status == 200)

        let frozen = cluster.processIDs()
        try #require(frozen.count > 1)
        for pid in frozen { kill(pid, SIGSTOP) }
        var thawed = false
        defer { if !thawed { for pid in frozen { kill(pid, SIGCONT) } } }

        // One after another: the first waits on a pooled connection's answer, the next on a new
        // connection to the frozen server (the pool's probe), the last finds the pool failing.
        var answers: [(status: Int, code: String?, retryAfter: Bool, elapsed: Duration)] = []
        for _ in 0..<3 {
            let start = ContinuousClock.now
            let reply = try server.signIn(account.email, account.password)
            answers.append((reply.status, reply.code, reply.header("Retry-After") != nil, ContinuousClock.now - start))
        }
        for pid in frozen { kill(pid, SIGCONT) }
        thawed = true
        server.acceptServerErrors(503)

        print("sign-ins against a frozen database: \(answers)")
        for answer in answers {
            #expect(answer.status == 503 && answer.retryAfter, "\(answer)")
            #expect(["database_unavailable", "overloaded"].contains(answer.code), "\(answer)")
            // The deadline is 2 s and each wait's own bound 20 s: 12 s fails only a wait that ignores the deadline.
            #expect(answer.elapsed < .seconds(12), "answered after \(answer.elapsed)")
        }

        // Thawed: sign-ins work again without a restart.
        try waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(200), "a sign-in to succeed again") {
            try server.signIn(account.email, account.password).status == 200
        }
        server.acceptServerErrors(503)
    }
}
