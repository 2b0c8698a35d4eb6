import Dispatch
import TestSupport
import Glibc
@testable import Postgres
import PostgresCluster
import Synchronization
import Testing
import Threads

@Suite(.testThreads) struct PostgresPoolTests {
    /// A borrower that finds every connection lent gives up with `poolTimeout` after the acquire
    /// timeout, while the connections are still lent: their holder keeps them until the borrower
    /// was answered (or 30 s, after which the borrower would be served, and fail the test).
    @Test func exhaustionTimesOutWithPoolTimeout() throws {
        let pool = PostgresPool(
            configuration: try TestDatabase.cluster().configuration(), size: 2,
            acquireTimeout: .milliseconds(200))
        defer { pool.close() }
        let held = DispatchSemaphore(value: 0)
        let answered = DispatchSemaphore(value: 0)
        let outcome = Mutex<(inUse: Int, error: PostgresError?, elapsed: Duration)?>(nil)
        try onThreads(2) { index in
            if index == 0 {
                try pool.withConnection { _ in
                    try pool.withConnection { _ in
                        held.signal()
                        _ = answered.wait(timeout: .now() + 30)
                    }
                }
                return
            }
            guard held.wait(timeout: .now() + 30) == .success else { throw TestFailure("the holder never got its two connections") }
            let inUse = pool.statistics.inUse
            var error: PostgresError?
            let elapsed = measure { error = postgresError { try pool.withConnection { _ in } } }
            answered.signal()
            outcome.withLock { $0 = (inUse, error, elapsed) }
        }
        let result = try #require(outcome.withLock { $0 })
        #expect(result.inUse == 2)
        // Answered while both connections were still lent: a borrower that waited past its
        // deadline would have been served once the holder gave up, without an error.
        #expect(result.error?.code == .poolTimeout, "\(String(reflecting: result.error))")
        #expect(result.error?.description == "The database is busy.")
        #expect(result.elapsed >= .milliseconds(190), "gave up after \(result.elapsed), before its timeout")
        let figures = pool.statistics
        #expect(figures.inUse == 0 && figures.idle == 2 && figures.created == 2 && figures.timedOut == 1)
        #expect(try pool.query("SELECT 1")[0].decode(Int.self, at: 0) == 1)
    }

    /// The acquire deadline is the timeout from now, to the nanosecond: read between two
    /// readings of the same monotonic clock, not timed.
    @Test func acquireDeadlineIsTheTimeoutFromNow() {
        for timeout: Duration in [.milliseconds(200), .seconds(5), .nanoseconds(1), .zero] {
            let before = Self.monotonicNanoseconds()
            let deadline = PostgresPool.deadline(after: timeout)
            let after = Self.monotonicNanoseconds()
            let nanoseconds = UInt64(timeout.components.seconds) * 1_000_000_000 + UInt64(timeout.components.attoseconds / 1_000_000_000)
            #expect(
                deadline >= before + nanoseconds && deadline <= after + nanoseconds,
                "\(timeout): \(deadline) not in \(before)...\(after) + \(nanoseconds)")
        }
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    @Test func waitersGetTheReleasedConnection() throws {
        let pool = PostgresPool(
            configuration: try TestDatabase.cluster().configuration(), size: 1,
            acquireTimeout: .seconds(10))
        defer { pool.close() }
        let holding = Barrier(2)
        let served = Atomic<Int>(0)
        let sawWaiter = Atomic<Bool>(false)
        try onThreads(2) { index in
            if index == 0 {
                do {
                    try pool.withConnection { _ in
                        try holding.arrive()
                        // Hold until the other thread is queued.
                        let start = ContinuousClock.now
                        while pool.statistics.waiting == 0, ContinuousClock.now - start < .seconds(5) { usleep(1000) }
                        sawWaiter.store(pool.statistics.waiting == 1, ordering: .relaxed)
                    }
                } catch let error as BarrierTimeout {
                    throw error
                } catch {}
            } else {
                try holding.arrive()
                if (try? pool.withConnection({ try $0.query("SELECT 1") })) != nil { served.add(1, ordering: .relaxed) }
            }
        }
        let sawWaiterValue = sawWaiter.load(ordering: .relaxed)
        #expect(sawWaiterValue)
        let servedValue = served.load(ordering: .relaxed)
        #expect(servedValue == 1)
        #expect(pool.statistics.created == 1)
    }

    @Test func manyThreadsShareABoundedPool() throws {
        let pool = PostgresPool(
            configuration: try TestDatabase.cluster().configuration(), size: 3,
            acquireTimeout: .seconds(20))
        defer { pool.close() }
        let failures = Atomic<Int>(0)
        onThreads(12) { index in
            for round in 0..<50 {
                do {
                    let value = try pool.query("SELECT \(index * 1000 + round)::int8")[0].decode(Int.self, at: 0)
                    if value != index * 1000 + round { failures.add(1, ordering: .relaxed) }
                } catch {
                    failures.add(1, ordering: .relaxed)
                }
            }
        }
        let failuresValue = failures.load(ordering: .relaxed)
        #expect(failuresValue == 0)
        let figures = pool.statistics
        #expect(figures.created <= 3 && figures.inUse == 0 && figures.waiting == 0)
    }

    @Test func brokenConnectionsAreReplaced() throws {
        let pool = PostgresPool(configuration: try TestDatabase.cluster().configuration(), size: 2)
        defer { pool.close() }
        let victim = try pool.query("SELECT pg_backend_pid()")[0].decode(Int32.self, at: 0)
        let killer = try TestDatabase.connection()
        #expect(try killer.query("SELECT pg_terminate_backend(\(victim))")[0].decode(Bool.self, at: 0))
        // pg_terminate_backend only signals: wait until the backend is gone (it has sent its FATAL
        // by then), so that the idle connection is surely dead when it is next lent.
        try waitForBackendToExit(victim, killer)
        // The idle connection is found dead before it is lent; the query runs on a new one.
        let pid = try pool.query("SELECT pg_backend_pid()")[0].decode(Int32.self, at: 0)
        #expect(pid != victim)
        #expect(pool.statistics.discarded == 1)

        // A connection that breaks while lent fails that request with connectionFailed.
        #expect(breakWhileLent(pool, killer)?.code == .connectionFailed)
        #expect(try pool.query("SELECT 1")[0].decode(Int.self, at: 0) == 1)
    }

    @Test func connectionsLeftInATransactionAreRolledBack() throws {
        let pool = PostgresPool(configuration: try TestDatabase.cluster().configuration(), size: 1)
        defer { pool.close() }
        let table = TestDatabase.uniqueName("leftover")
        try pool.execute("CREATE TABLE \(identifier: table) (n int)")
        try pool.withConnection { connection in
            try connection.execute("BEGIN")
            try connection.execute("INSERT INTO \(identifier: table) VALUES (1)")
        }
        #expect(try pool.query("SELECT count(*) FROM \(identifier: table)")[0].decode(Int.self, at: 0) == 0)
    }

    /// `close()` waits for lent connections: with one still lent it waits out its whole timeout
    /// and says so (false), serving no new borrow meanwhile; once the connection is back, it
    /// returns true with nothing lent or idle. Nothing here is timed by the test: the borrower
    /// holds its connection until the closer has seen the first `close()` return.
    @Test func closeWaitsForLentConnectionsAndRefusesNewOnes() throws {
        let pool = PostgresPool(configuration: try TestDatabase.cluster().configuration(), size: 2)
        try pool.query("SELECT 1")  // an idle connection, which close() ends at once
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let outcome = Mutex<(waited: Duration, early: Bool, idle: Int, refused: PostgresError.Code?, drained: Bool)?>(nil)
        try onThreads(2) { index in
            if index == 0 {
                try pool.withConnection { _ in
                    held.signal()
                    guard release.wait(timeout: .now() + 30) == .success else { throw TestFailure("the closer never released the borrower") }
                }
                return
            }
            guard held.wait(timeout: .now() + 30) == .success else { throw TestFailure("the borrower never got its connection") }
            let start = ContinuousClock.now
            let early = pool.close(timeout: .milliseconds(300))
            let waited = ContinuousClock.now - start
            let idle = pool.statistics.idle
            let refused = postgresError { try pool.withConnection { _ in } }?.code
            release.signal()
            let drained = pool.close(timeout: .seconds(30))
            outcome.withLock { $0 = (waited, early, idle, refused, drained) }
        }
        let result = try #require(outcome.withLock { $0 })
        #expect(!result.early, "close() said every connection was back while one was lent")
        // (A hair under the timeout: the pool's deadline and this measure read different clocks.)
        #expect(result.waited >= .milliseconds(290), "close() gave up after \(result.waited), before its timeout, with a connection lent")
        #expect(result.idle == 0)
        #expect(result.refused == .poolClosed)
        #expect(result.drained, "close() reported a connection still lent after it came back")
        #expect(pool.statistics.inUse == 0 && pool.statistics.idle == 0)
    }

    @Test func recoversAfterCrashAndRestartWithoutARestartOfThePool() throws {
        var options = LocalCluster.Options()
        options.settings["synchronous_commit"] = "on"
        let cluster = try LocalCluster.startTemporary(options: options)
        defer { cluster.stop() }
        let pool = PostgresPool(configuration: try cluster.configuration(), size: 3, acquireTimeout: .seconds(2))
        defer { pool.close() }
        try pool.execute("CREATE TABLE survivors (n int)")
        try pool.execute("INSERT INTO survivors VALUES (42)")
        // Warm several connections so that stale ones sit idle through the outage: three
        // borrowers that each hold theirs until all three hold one.
        let warm = Barrier(3)
        try onThreads(3) { _ in try pool.withConnection { _ in try warm.arrive() } }
        #expect(pool.statistics.idle == 3)

        cluster.stopServer(mode: .immediate)  // SIGQUIT to the postmaster
        for _ in 0..<3 {
            let before = pool.statistics
            let error = postgresError { try pool.query("SELECT 1") }
            #expect(error?.code == .connectionFailed, "\(String(reflecting: error))")
            // Answered fast by the work it did: no wait for a connection to come back (that would
            // end in poolTimeout), and at most one attempt to connect, no retrying until the deadline.
            let after = pool.statistics
            #expect(after.failed - before.failed <= 1 && after.timedOut == 0 && after.waiting == 0, "\(before) then \(after)")
        }
        #expect(pool.statistics.failed >= 1)

        try cluster.startServer()  // crash recovery on the same data directory
        let survivors = try stage("first query after the restart") { try pool.query("SELECT n FROM survivors")[0].decode(Int.self, at: 0) }
        #expect(survivors == 42)
        #expect(pool.statistics.idle + pool.statistics.inUse <= 3)

        // A crash while connections are idle, then an immediate restart: the next request succeeds.
        try cluster.restart(mode: .immediate)
        #expect(
            try stage("first query after the second restart") { try pool.query("SELECT count(*) FROM survivors")[0].decode(Int.self, at: 0) } == 1)
    }
}

/// While the server is failing, borrowers do not queue for it: one at a time (the probe) opens a
/// connection, every other that finds none idle fails at once, and the first connection that comes
/// back healthy ends it.
@Suite(.testThreads) struct PostgresPoolFailingServerTests {
    /// A "server" that completes the TCP handshake and then never says a word (a frozen server, or
    /// a pooler holding clients while it has no server): an attempt to connect lasts until the
    /// server hangs up, which here the test does (the gate), or for the whole connect timeout, a
    /// minute, which no attempt is allowed to reach. Nothing is timed: each borrower records
    /// whether the gate was still closed when it was answered.
    @Test func whileTheServerIsFailingOnlyTheProbeWaitsForIt() throws {
        let listener = try SilentListener()
        defer { listener.close() }
        var configuration = try PostgresConfiguration(
            connectionString: "host=127.0.0.1 port=\(listener.port) user=nobody dbname=nothing")
        configuration.connectTimeout = .seconds(60)
        let pool = PostgresPool(configuration: configuration, size: 4, acquireTimeout: .seconds(60))
        defer { pool.close(timeout: .zero) }

        // The first failure: it waits for the server until the server hangs up.
        let first = try borrowBehindAGate(pool, listener, borrowers: 1, answeredBeforeTheGateOpens: 0)
        #expect(first.map { $0.code } == [.connectionFailed] && first.map { $0.whileClosed } == [false], "\(first)")
        #expect(pool.statistics.failed == 1 && pool.statistics.failedFast == 0 && pool.statistics.failing)

        // Now four at once: one probes and waits for the server, three fail at once, all three
        // while the probe's attempt is still open.
        let four = try borrowBehindAGate(pool, listener, borrowers: 4, answeredBeforeTheGateOpens: 3)
        #expect(four.map { $0.code } == Array(repeating: .connectionFailed, count: 4), "\(four)")
        #expect(four.filter { $0.whileClosed }.count == 3, "\(four)")
        let figures = pool.statistics
        #expect(figures.waiting == 0 && figures.timedOut == 0 && figures.failedFast == 3 && figures.failing)
        #expect(figures.failed == 2)
    }

    /// Runs `borrowers` borrowers at once against `listener`, whose gate (hanging up on whoever is
    /// connected to it) stays closed until `answeredBeforeTheGateOpens` of them were answered, or
    /// 30 s passed; then it hangs up until every borrower was answered. Each borrower's error
    /// code, and whether the gate was still closed when it was answered.
    private func borrowBehindAGate(
        _ pool: PostgresPool, _ listener: SilentListener, borrowers: Int, answeredBeforeTheGateOpens early: Int
    ) throws -> [(code: PostgresError.Code?, whileClosed: Bool)] {
        let open = Atomic<Bool>(false)
        let answered = Atomic<Int>(0)
        let outcomes = Mutex<[(code: PostgresError.Code?, whileClosed: Bool)]>([])
        let gatekeeper = Mutex<(any Error)?>(nil)
        onThreads(borrowers + 1) { index in
            guard index == borrowers else {
                let code = postgresError { try pool.withConnection { _ in } }?.code
                let whileClosed = !open.load(ordering: .sequentiallyConsistent)
                outcomes.withLock { $0.append((code, whileClosed)) }
                answered.add(1, ordering: .sequentiallyConsistent)
                return
            }
            do {
                // A wrong pool keeps the early ones waiting: the gate opens anyway after 30 s, and
                // they count as answered after it.
                if early > 0 {
                    try waitUntil(timeout: .seconds(30), "\(early) borrowers answered while the server is silent") {
                        answered.load(ordering: .sequentiallyConsistent) >= early
                    }
                }
            } catch {
                gatekeeper.withLock { $0 = error }
            }
            open.store(true, ordering: .sequentiallyConsistent)
            do {
                try waitUntil(timeout: .seconds(30), "every borrower answered once the server hangs up") {
                    _ = listener.takePendingConnections()
                    return answered.load(ordering: .sequentiallyConsistent) == borrowers
                }
            } catch {
                gatekeeper.withLock { $0 = $0 ?? error }
            }
        }
        if let error = gatekeeper.withLock({ $0 }) { Issue.record(error) }
        return outcomes.withLock { $0 }
    }

    /// A connection broken while lent marks the server failing; the next borrower probes, its
    /// connection comes back healthy, and borrowers queue again as usual.
    @Test func aHealthyConnectionEndsIt() throws {
        let pool = PostgresPool(configuration: try TestDatabase.cluster().configuration(), size: 2, acquireTimeout: .seconds(10))
        defer { pool.close() }
        let killer = try TestDatabase.connection()
        defer { killer.close() }
        #expect(breakWhileLent(pool, killer)?.code == .connectionFailed)
        // The probe: a new connection, healthy.
        #expect(try pool.query("SELECT 1")[0].decode(Int.self, at: 0) == 1)
        // Eight borrowers on two connections: they wait their turn, none fails.
        let failures = Atomic<Int>(0)
        onThreads(8) { _ in
            if (try? pool.withConnection({ connection in
                usleep(20_000)
                return try connection.query("SELECT 1")
            })) == nil {
                failures.add(1, ordering: .relaxed)
            }
        }
        #expect(failures.load(ordering: .relaxed) == 0)
        #expect(!pool.statistics.failing && pool.statistics.failedFast == 0)
    }
}

/// Borrows a connection, has `killer` terminate its backend, and uses it again: the error that gives.
/// The deadline of the request a thread works for (`RequestDeadline`, injected here): the pool's
/// waits and its connections' round trips end by then, whatever their own bounds (60 s here).
/// The deadline is 1 s; a check allows half the waits' own bound, so that only a wait that ignored
/// the deadline fails it, never a slow machine.
@Suite(.testThreads) struct PostgresPoolDeadlineTests {
    @Test func aWaitForAFreeConnectionEndsAtTheRequestsDeadline() throws {
        let pool = PostgresPool(configuration: try TestDatabase.cluster().configuration(), size: 1, acquireTimeout: .seconds(60))
        defer { pool.close() }
        try pool.withConnection { _ in
            var error: PostgresError?
            let elapsed = measure {
                error = postgresError { try RequestDeadline.with(.after(.seconds(1))) { try pool.withConnection { _ in } } }
            }
            #expect(error?.code == .timedOut, "\(String(describing: error))")
            #expect(elapsed < .seconds(30), "gave up after \(elapsed)")
        }
        let figures = pool.statistics
        #expect(figures.timedOut == 1 && figures.waiting == 0 && figures.inUse == 0 && figures.idle == 1)
    }

    @Test func aRoundTripEndsAtTheRequestsDeadline() throws {
        var configuration = try TestDatabase.cluster().configuration()
        configuration.responseTimeout = .seconds(60)
        configuration.statementTimeout = .seconds(60)
        let pool = PostgresPool(configuration: configuration, size: 2, acquireTimeout: .seconds(60))
        defer { pool.close() }
        let table = TestDatabase.uniqueName("deadline_locked")
        try pool.execute("CREATE TABLE \(identifier: table) (id int)")
        // Another session holds the table's lock: a statement that needs it waits as long as that lasts.
        let holder = try TestDatabase.connection()
        defer { holder.close() }
        let (error, elapsed) = try holder.withTransaction { connection -> (PostgresError?, Duration) in
            try connection.execute("LOCK TABLE \(identifier: table) IN ACCESS EXCLUSIVE MODE")
            var error: PostgresError?
            let elapsed = measure {
                error = postgresError {
                    _ = try RequestDeadline.with(.after(.seconds(1))) { try pool.query("SELECT count(*) FROM \(identifier: table)") }
                }
            }
            return (error, elapsed)
        }
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(elapsed < .seconds(30), "gave up after \(elapsed)")
        // The connection whose answer never came is abandoned; the next request gets a good one.
        #expect(pool.statistics.discarded == 1)
        #expect(try pool.query("SELECT count(*) FROM \(identifier: table)")[0].decode(Int.self, at: 0) == 0)
    }

    /// A connect ends at the request's deadline too (libpq's own timeout counts whole seconds and
    /// at least 2): here to a server that accepts and never says a word. That is the request's
    /// time running out, not proof that the server is failing.
    @Test func aConnectEndsAtTheRequestsDeadline() throws {
        let silent = try SilentListener()
        defer { silent.close() }
        var configuration = try PostgresConfiguration(connectionString: "host=127.0.0.1 port=\(silent.port) dbname=none user=none")
        configuration.connectTimeout = .seconds(60)
        let pool = PostgresPool(configuration: configuration, size: 2, acquireTimeout: .seconds(60))
        defer { pool.close() }
        var error: PostgresError?
        let elapsed = measure { error = postgresError { _ = try RequestDeadline.with(.after(.seconds(1))) { try pool.query("SELECT 1") } } }
        #expect(error?.code == .timedOut, "\(String(describing: error))")
        #expect(elapsed < .seconds(30), "gave up after \(elapsed)")
        let figures = pool.statistics
        #expect(figures.created == 0 && figures.failed == 1 && !figures.failing && figures.inUse == 0)
        // Outside a request the connection's own timeout holds, and is the server's failure.
        configuration.connectTimeout = .milliseconds(500)
        let connectError = postgresError { _ = try PostgresConnection(configuration: configuration) }
        #expect(connectError?.code == .connectionFailed, "\(String(describing: connectError))")
    }

    /// Nothing is asked of the database once the deadline has passed: no connection is lent, and
    /// a lent one sends nothing and stays as it was.
    @Test func nothingIsSentOnceTheRequestsDeadlineHasPassed() throws {
        let pool = PostgresPool(configuration: try TestDatabase.cluster().configuration(), size: 1, acquireTimeout: .seconds(60))
        defer { pool.close() }
        _ = try pool.query("SELECT 1")
        #expect(postgresError { _ = try RequestDeadline.with(.after(.zero)) { try pool.query("SELECT 1") } }?.code == .timedOut)
        try pool.withConnection { connection throws in
            let error = postgresError { _ = try RequestDeadline.with(.after(.zero)) { try connection.query("SELECT 1") } }
            #expect(error?.code == .timedOut)
            #expect(connection.isUsable && !connection.isInTransaction)
            #expect(try connection.query("SELECT 2")[0].decode(Int.self, at: 0) == 2)
        }
        let figures = pool.statistics
        #expect(figures.created == 1 && figures.discarded == 0 && figures.idle == 1)
    }
}

private func breakWhileLent(_ pool: PostgresPool, _ killer: PostgresConnection) -> PostgresError? {
    postgresError {
        try pool.withConnection { connection in
            let own = try connection.query("SELECT pg_backend_pid()")[0].decode(Int32.self, at: 0)
            _ = try killer.query("SELECT pg_terminate_backend(\(own))")
            // Used again only once the backend is gone, so that the use surely fails.
            try waitForBackendToExit(own, killer)
            try connection.query("SELECT 1")
        }
    }
}

/// Waits until the backend `pid` has left `pg_stat_activity`: it has exited (after sending its
/// client the FATAL of `pg_terminate_backend`, which only signals it).
private func waitForBackendToExit(_ pid: Int32, _ observer: PostgresConnection) throws {
    try waitUntil(timeout: .seconds(30), "backend \(pid) to exit after pg_terminate_backend") {
        try observer.query("SELECT count(*) FROM pg_stat_activity WHERE pid = \(pid)")[0].decode(Int.self, at: 0) == 0
    }
}

/// Runs `body`, naming the stage and the full error (SQLSTATE, server message) if it throws.
private func stage<T>(_ name: String, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch {
        Issue.record("\(name): \(String(reflecting: error))")
        throw error
    }
}
