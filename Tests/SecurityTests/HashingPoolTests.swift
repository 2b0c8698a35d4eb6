import Testing
@testable import Security
import Threads

/// A one-shot latch: `wait()` blocks until `open()`.
private final class Gate: @unchecked Sendable {
    private let lock = ConditionLock()
    private var isOpen = false

    func open() {
        lock.withLock {
            isOpen = true
            lock.broadcast()
        }
    }

    func wait() {
        lock.withLock(when: { isOpen }) {}
    }
}

private struct Boom: Error, Equatable {}

@Suite struct HashingPoolTests {
    @Test func runsWorkAndReturnsItsResult() throws {
        let pool = HashingPool(workers: 2)
        #expect(try pool.run { 6 * 7 } == 42)
        let hasher = try PasswordHasher(parameters: .testing, allowWeakParameters: true)
        let phc = try pool.run { try hasher.hash(password: "pw") }
        #expect(try pool.run { try hasher.verify(password: "pw", phc: phc) } == .valid)
        // A job is booked before its caller is released, so the figures are already current.
        let figures = pool.statistics
        #expect(figures.completed == 3 && figures.busy == 0 && figures.queued == 0)
        pool.shutdown()
    }

    @Test func rethrowsWhatTheWorkThrows() {
        let pool = HashingPool(workers: 1)
        defer { pool.shutdown() }
        #expect(throws: Boom()) { try pool.run { throw Boom() } }
    }

    @Test func defaults() {
        let pool = HashingPool()
        defer { pool.shutdown() }
        #expect(pool.workerCount == HashingPool.defaultWorkerCount)
        #expect(pool.workerCount >= 1)
        #expect(pool.queueCapacity == 2 * pool.workerCount)
    }

    @Test func manyCallersWithinCapacityAreAllServed() throws {
        let pool = HashingPool(workers: 2, queueCapacity: 2)
        // Four callers blocking in `run` never exceed workers + queue, so none is refused.
        let callers = (0..<4).map { caller in
            OSThread(name: "test") {
                for job in 0..<25 {
                    let result = Result { try pool.run { caller * 100 + job } }
                    precondition((try? result.get()) == caller * 100 + job, "\(result)")
                }
            }
        }
        for caller in callers { caller.join() }
        pool.shutdown()
        let figures = pool.statistics
        #expect(figures.completed == 100)
        #expect(figures.rejected == 0)
        #expect(figures.busy == 0 && figures.queued == 0)
    }

    @Test func rejectsImmediatelyWhenTheQueueIsFull() throws {
        let pool = HashingPool(workers: 1, queueCapacity: 1)
        let started = Gate(), release = Gate()
        try pool.submit {
            started.open()
            release.wait()
        }
        try pool.submit { release.wait() }
        started.wait()

        var figures = pool.statistics
        #expect(figures.busy == 1 && figures.queued == 1)

        expectSecurityError(.overloaded) { try pool.run { 1 } }
        expectSecurityError(.overloaded) { try pool.submit {} }
        figures = pool.statistics
        #expect(figures.rejected == 2)
        #expect(figures.completed == 0)

        release.open()
        pool.shutdown()
        figures = pool.statistics
        #expect(figures.completed == 2 && figures.rejected == 2)
    }

    @Test func shutdownDrainsQueuedWorkThenRefusesMore() throws {
        let pool = HashingPool(workers: 1, queueCapacity: 4)
        let release = Gate()
        let counter = Counter()
        try pool.submit { release.wait() }
        for _ in 0..<4 { try pool.submit { counter.increment() } }
        let closer = OSThread(name: "test") { pool.shutdown() }
        release.open()
        closer.join()
        #expect(counter.value == 4)
        expectSecurityError(.shutDown) { try pool.submit {} }
        expectSecurityError(.shutDown) { try pool.run { 1 } }
        pool.shutdown()  // idempotent
        #expect(pool.statistics.completed == 5)
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = ConditionLock()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
