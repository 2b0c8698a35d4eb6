import Glibc
import Postgres
import TestSupport
import Testing

/// `PostgresPipeline` against the real server, driven by `poll` the way an event loop drives it.
@Suite(.testThreads) struct PostgresPipelineTests {
    static let echo = PostgresStatement(unsafeSQL: "SELECT $1::int8 * 2, $2::text")
    static let divide = PostgresStatement(unsafeSQL: "SELECT 10 / $1::int8")
    static let backendPID = PostgresStatement(unsafeSQL: "SELECT pg_backend_pid()")
    static let preparedCount = PostgresStatement(unsafeSQL: "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1")

    static func pipeline() throws -> PostgresPipeline {
        try PostgresPipeline(configuration: try TestDatabase.cluster().configuration())
    }

    static func binds(_ number: Int, _ text: String = "") -> PostgresBindings {
        var binds = PostgresBindings()
        binds.append(number)
        binds.append(text)
        return binds
    }

    /// Syncs, then waits on the socket and feeds the pipeline until `done` or 10 s.
    static func drive(_ pipeline: PostgresPipeline, until done: () -> Bool) {
        let deadline = monotonicSeconds() + 10
        pipeline.sync()
        while !done(), !pipeline.isBroken, monotonicSeconds() < deadline {
            var descriptor = pollfd(fd: pipeline.socket, events: Int16(POLLIN) | (pipeline.wantsWrite ? Int16(POLLOUT) : 0), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            if descriptor.revents & Int16(POLLOUT) != 0 { pipeline.writable() }
            if descriptor.revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 { pipeline.readable() }
            pipeline.sync()
        }
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    @Test func manyStatementsInFlightComeBackInOrder() throws {
        let pipeline = try PostgresPipelineTests.pipeline()
        defer { pipeline.close() }
        var results: [(Int, String)] = []
        var failures = 0
        for batch in 0..<10 {
            for n in (batch * 100)..<(batch * 100 + 100) {
                try pipeline.send(PostgresPipelineTests.echo, PostgresPipelineTests.binds(n, "n\(n)")) { result in
                    guard case .success(let rows) = result, let row = rows.first,
                        let values = try? row.decode((Int, String).self)
                    else {
                        failures += 1
                        return
                    }
                    results.append(values)
                }
            }
            pipeline.sync()
        }
        #expect(pipeline.pendingCount == 1_000)
        PostgresPipelineTests.drive(pipeline) { results.count + failures == 1_000 }
        #expect(failures == 0)
        #expect(results.map(\.0) == (0..<1_000).map { $0 * 2 })
        #expect(results.map(\.1) == (0..<1_000).map { "n\($0)" })
        #expect(pipeline.pendingCount == 0)
        // Prepared once on this connection, then found by id.
        var count: Int?
        var binds = PostgresBindings()
        binds.append(PostgresPipelineTests.echo.sql)
        try pipeline.send(PostgresPipelineTests.preparedCount, binds) { result in
            count = try? result.get().first?.decode(Int.self, at: 0)
        }
        PostgresPipelineTests.drive(pipeline) { count != nil }
        #expect(count == 1)
    }

    @Test func aFailedStatementAbortsOnlyTheRestOfItsBatch() throws {
        let pipeline = try PostgresPipelineTests.pipeline()
        defer { pipeline.close() }
        var outcomes: [Result<Int, PostgresError>] = []
        func send(_ divisor: Int) throws {
            var binds = PostgresBindings()
            binds.append(divisor)
            try pipeline.send(PostgresPipelineTests.divide, binds) { result in
                outcomes.append(
                    result.flatMap { rows in
                        Result { try rows[0].decode(Int.self, at: 0) }.mapError { $0 as! PostgresError }
                    })
            }
        }
        try send(5)
        try send(0)
        try send(2)
        pipeline.sync()
        try send(1)
        PostgresPipelineTests.drive(pipeline) { outcomes.count == 4 }
        #expect(outcomes.count == 4)
        #expect((try? outcomes[0].get()) == 2)
        if case .failure(let error) = outcomes[1] {
            #expect(error.code == .queryFailed)
            #expect(error.sqlState?.rawValue == "22012")
        } else {
            Issue.record("division by zero succeeded")
        }
        if case .failure(let error) = outcomes[2] {
            #expect(error.code == .statementAborted)
        } else {
            Issue.record("the statement after the failure was not aborted")
        }
        // The next batch runs normally.
        #expect((try? outcomes[3].get()) == 10)
        #expect(!pipeline.isBroken)
    }

    /// A durable statement is reported once its batch is committed (another connection sees it),
    /// and as `statementAborted` when a later statement of the batch rolled it back.
    @Test func durableStatementsAreReportedOnlyWhenCommitted() throws {
        let table = TestDatabase.uniqueName("pipeline_writes")
        let observer = try TestDatabase.connection()
        try observer.execute("CREATE TABLE \(identifier: table) (id int8 PRIMARY KEY)")
        let insert = PostgresStatement(unsafeSQL: "INSERT INTO \(table) VALUES ($1) RETURNING id")
        func ids() throws -> [Int] {
            try observer.query("SELECT id FROM \(identifier: table) ORDER BY id").map { try $0.decode(Int.self, at: 0) }
        }
        let pipeline = try PostgresPipelineTests.pipeline()
        defer { pipeline.close() }
        var seenAtCompletion: [Int]?
        var one = PostgresBindings()
        one.append(1)
        try pipeline.send(insert, one, durable: true) { result in
            #expect((try? result.get().first?.decode(Int.self, at: 0)) == 1)
            seenAtCompletion = try? ids()
        }
        PostgresPipelineTests.drive(pipeline) { seenAtCompletion != nil }
        #expect(seenAtCompletion == [1])

        // One batch: 2, then 1 again (a unique violation), then 3: all of it is rolled back.
        var outcomes: [Int: Result<PostgresRows, PostgresError>] = [:]
        for id in [2, 1, 3] {
            var binds = PostgresBindings()
            binds.append(id)
            try pipeline.send(insert, binds, durable: true) { outcomes[id] = $0 }
        }
        PostgresPipelineTests.drive(pipeline) { outcomes.count == 3 }
        func code(_ id: Int) -> PostgresError.Code? {
            if case .failure(let error) = outcomes[id] { return error.code }
            return nil
        }
        #expect(code(2) == .statementAborted)
        #expect(code(3) == .statementAborted)
        if case .failure(let error) = outcomes[1] { #expect(error.sqlState == .uniqueViolation) } else { Issue.record("duplicate accepted") }
        #expect(try ids() == [1])
        #expect(!pipeline.isBroken)
    }

    /// A statement the server refuses to prepare fails (its batch aborted) and is prepared again
    /// at its next use, which succeeds once the server accepts it.
    @Test func aRefusedPrepareIsTriedAgain() throws {
        let table = TestDatabase.uniqueName("pipeline_later")
        let count = PostgresStatement(unsafeSQL: "SELECT count(*) FROM \(table)")
        let pipeline = try PostgresPipelineTests.pipeline()
        defer { pipeline.close() }
        var first: Result<PostgresRows, PostgresError>?
        try pipeline.send(count, PostgresBindings()) { first = $0 }
        PostgresPipelineTests.drive(pipeline) { first != nil }
        if case .failure(let error) = first { #expect(error.code == .statementAborted) } else { Issue.record("\(String(describing: first))") }
        try TestDatabase.connection().execute("CREATE TABLE \(identifier: table) (id int8)")
        var second: Int?
        try pipeline.send(count, PostgresBindings()) { second = try? $0.get().first?.decode(Int.self, at: 0) }
        PostgresPipelineTests.drive(pipeline) { second != nil }
        #expect(second == 0)
        #expect(!pipeline.isBroken)
    }

    @Test func completionsMaySendAgain() throws {
        let pipeline = try PostgresPipelineTests.pipeline()
        defer { pipeline.close() }
        var values: [Int] = []
        func chain(_ n: Int) throws {
            try pipeline.send(PostgresPipelineTests.echo, PostgresPipelineTests.binds(n)) { result in
                guard let value = try? result.get().first?.decode(Int.self, at: 0) else { return }
                values.append(value)
                if n < 20 { try? chain(n + 1) }
            }
        }
        try chain(1)
        PostgresPipelineTests.drive(pipeline) { values.count == 20 }
        #expect(values == (1...20).map { $0 * 2 })
    }

    @Test func aLargeBatchWaitsForTheSocketToTakeIt() throws {
        let pipeline = try PostgresPipelineTests.pipeline()
        defer { pipeline.close() }
        let text = String(repeating: "x", count: 4_096)
        var received = 0
        var wrong = 0
        for n in 0..<4_000 {
            try pipeline.send(PostgresPipelineTests.echo, PostgresPipelineTests.binds(n, text)) { result in
                guard let row = try? result.get().first, (try? row.decode(Int.self, at: 0)) == 2 * n,
                    (try? row.decode(String.self, at: 1)) == text
                else {
                    wrong += 1
                    return
                }
                received += 1
            }
        }
        PostgresPipelineTests.drive(pipeline) { received + wrong == 4_000 }
        #expect(received == 4_000)
        #expect(wrong == 0)
        #expect(!pipeline.wantsWrite)
    }

    @Test func aTerminatedBackendFailsWhatIsPendingAndEveryLaterSend() throws {
        let pipeline = try PostgresPipelineTests.pipeline()
        var pid: Int32?
        try pipeline.send(PostgresPipelineTests.backendPID, PostgresBindings()) { result in
            pid = try? result.get().first?.decode(Int32.self, at: 0)
        }
        PostgresPipelineTests.drive(pipeline) { pid != nil }
        let killer = try TestDatabase.connection()
        #expect(try killer.query("SELECT pg_terminate_backend(\(pid ?? 0))")[0].decode(Bool.self, at: 0))
        var outcome: Result<PostgresRows, PostgresError>?
        try pipeline.send(PostgresPipelineTests.echo, PostgresPipelineTests.binds(1)) { outcome = $0 }
        PostgresPipelineTests.drive(pipeline) { outcome != nil }
        if case .failure(let error) = outcome {
            #expect(error.code == .connectionFailed)
        } else {
            Issue.record("a statement on a terminated backend did not fail: \(String(describing: outcome))")
        }
        #expect(pipeline.isBroken)
        #expect(throws: PostgresError.self) {
            try pipeline.send(PostgresPipelineTests.echo, PostgresPipelineTests.binds(1)) { _ in }
        }
        pipeline.close()
    }

    @Test func closingFailsPendingStatements() throws {
        let pipeline = try PostgresPipelineTests.pipeline()
        var outcome: Result<PostgresRows, PostgresError>?
        try pipeline.send(PostgresPipelineTests.echo, PostgresPipelineTests.binds(1)) { outcome = $0 }
        pipeline.close()
        if case .failure(let error) = outcome { #expect(error.code == .connectionFailed) } else { Issue.record("not failed") }
    }

    @Test func parametersThatCannotBeSentAreRefusedAtOnce() throws {
        let pipeline = try PostgresPipelineTests.pipeline()
        defer { pipeline.close() }
        var called = false
        #expect(throws: PostgresError.self) {
            try pipeline.send(PostgresPipelineTests.echo, PostgresPipelineTests.binds(1, "a\u{0}b")) { _ in called = true }
        }
        // The types of a statement's first use stay.
        try pipeline.send(
            PostgresPipelineTests.divide,
            {
                var b = PostgresBindings(); b.append(1); return b
            }()
        ) { _ in }
        var texts = PostgresBindings()
        texts.append("1")
        #expect(throws: PostgresError.self) { try pipeline.send(PostgresPipelineTests.divide, texts) { _ in called = true } }
        PostgresPipelineTests.drive(pipeline) { pipeline.pendingCount == 0 }
        #expect(!called)
        #expect(!pipeline.isBroken)
    }
}
