import TestSupport
import Postgres
import Synchronization
import Testing

struct Deliberate: Error {}

@Suite(.testThreads) struct PostgresTransactionTests {
    @Test func commitsOnReturnAndRollsBackOnThrow() throws {
        let pool = try TestDatabase.pool()
        let table = TestDatabase.uniqueName("tx")
        try pool.execute("CREATE TABLE \(identifier: table) (n int)")
        let value = try pool.withTransaction { connection in
            try connection.execute("INSERT INTO \(identifier: table) VALUES (1)")
            return "done"
        }
        #expect(value == "done")
        #expect(throws: Deliberate.self) {
            try pool.withTransaction { connection in
                try connection.execute("INSERT INTO \(identifier: table) VALUES (2)")
                throw Deliberate()
            }
        }
        // A body that swallows a failed statement must not "commit" (PostgreSQL would roll back silently).
        let swallowed = postgresError {
            try pool.withTransaction { connection in
                try connection.execute("INSERT INTO \(identifier: table) VALUES (3)")
                _ = try? connection.execute("INSERT INTO \(identifier: table) VALUES ('not a number')")
            }
        }
        #expect(swallowed?.code == .queryFailed)
        let rows = try pool.query("SELECT n FROM \(identifier: table) ORDER BY n").map { try $0.decode(Int.self, at: 0) }
        #expect(rows == [1])
    }

    @Test func nestedTransactionsAreRefused() throws {
        let pool = try TestDatabase.pool()
        let error = postgresError {
            try pool.withTransaction { connection in
                try connection.withTransaction { _ in }
            }
        }
        #expect(error?.code == .invalidUsage)
    }

    @Test func serializationFailuresAreRetried() throws {
        let pool = try TestDatabase.pool()
        let table = TestDatabase.uniqueName("ledger")
        try pool.execute("CREATE TABLE \(identifier: table) (class int, value int)")
        try pool.execute("INSERT INTO \(identifier: table) VALUES (1, 10), (2, 20)")

        // Write skew: each transaction reads one class and writes the other. With both reads done
        // before either write, serializable isolation must abort one of them.
        func run(retries: Int) throws -> (attempts: Int, errors: [PostgresError]) {
            let attempts = Atomic<Int>(0)
            let errors = Mutex<[PostgresError]>([])
            let barrier = Barrier(2)
            try onThreads(2) { index in
                let (read, write) = index == 0 ? (1, 2) : (2, 1)
                var first = true
                do {
                    try pool.withTransaction(isolation: .serializable, retries: retries) { connection in
                        attempts.add(1, ordering: .relaxed)
                        let sum = try connection.query(
                            "SELECT coalesce(sum(value), 0)::int8 FROM \(identifier: table) WHERE class = \(read)")[0].decode(Int.self, at: 0)
                        if first { first = false; try barrier.arrive() }
                        try connection.execute("INSERT INTO \(identifier: table) VALUES (\(write), \(sum))")
                    }
                } catch let error as PostgresError {
                    errors.withLock { $0.append(error) }
                } catch let error as BarrierTimeout {
                    throw error
                } catch {}
            }
            return (attempts.load(ordering: .relaxed), errors.withLock { $0 })
        }

        let withoutRetry = try run(retries: 0)
        #expect(withoutRetry.errors.count == 1)
        #expect(withoutRetry.errors.first?.sqlState == .serializationFailure)
        #expect(withoutRetry.errors.first?.isTransient == true)

        let withRetry = try run(retries: 3)
        #expect(withRetry.errors.isEmpty)
        #expect(withRetry.attempts == 3)
    }

    @Test func deadlocksAreRetried() throws {
        let pool = try TestDatabase.pool()
        let table = TestDatabase.uniqueName("locks")
        try pool.execute("CREATE TABLE \(identifier: table) (id int PRIMARY KEY, n int)")
        try pool.execute("INSERT INTO \(identifier: table) VALUES (1, 0), (2, 0)")
        let attempts = Atomic<Int>(0)
        let failures = Atomic<Int>(0)
        let barrier = Barrier(2)
        try onThreads(2) { index in
            let (first, second): (Int32, Int32) = index == 0 ? (1, 2) : (2, 1)
            var initial = true
            do {
                try pool.withTransaction(retries: 3) { connection in
                    attempts.add(1, ordering: .relaxed)
                    try connection.execute("UPDATE \(identifier: table) SET n = n + 1 WHERE id = \(first)")
                    if initial { initial = false; try barrier.arrive() }
                    try connection.execute("UPDATE \(identifier: table) SET n = n + 1 WHERE id = \(second)")
                }
            } catch let error as BarrierTimeout {
                throw error
            } catch {
                failures.add(1, ordering: .relaxed)
            }
        }
        let failuresValue = failures.load(ordering: .relaxed)
        #expect(failuresValue == 0)
        let attemptsValue = attempts.load(ordering: .relaxed)
        // At least one retry; two if the victim's retry happened to lose again.
        #expect(attemptsValue >= 3)
        let total = try pool.query("SELECT sum(n)::int8 FROM \(identifier: table)")[0].decode(Int.self, at: 0)
        #expect(total == 4)
    }
}
