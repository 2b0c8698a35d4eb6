import Glibc
import TestSupport
import Testing
@testable import Cryptography
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

/// A pool of one worker that is busy until `release` opens: whatever is submitted next waits in
/// the queue (`queueCapacity` places).
private func poolWithItsWorkerHeld(queueCapacity: Int) throws -> (pool: HashingPool, release: Gate) {
    let pool = HashingPool(workers: 1, queueCapacity: queueCapacity)
    let started = Gate(), release = Gate()
    try pool.submit {
        started.open()
        release.wait()
    }
    started.wait()
    return (pool, release)
}

@Suite(.testThreads) struct HashingPoolTests {
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

    /// The workers' scheduling class, as the kernel reports it to the thread itself.
    @Test(arguments: [(HashingPool.Priority.idle, 5 /* SCHED_IDLE */), (.normal, 0 /* SCHED_OTHER */)] as [(HashingPool.Priority, Int32)])
    func workersAreScheduledAsConfigured(_ priority: HashingPool.Priority, _ policy: Int32) throws {
        let pool = HashingPool(workers: 1, priority: priority)
        defer { pool.shutdown() }
        #expect(try pool.run { sched_getscheduler(0) } == policy)
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
        // Four callers blocking in `run` never exceed workers + queue, so none is refused. Each
        // result is recorded and checked here after the join: a check on a caller's thread could
        // only crash the whole run.
        let results = Results()
        let callers = (0..<4).map { caller in
            OSThread(name: "test") {
                for job in 0..<25 {
                    let id = caller * 100 + job
                    results.append(id, Result { try pool.run { id } })
                }
            }
        }
        for caller in callers { caller.join() }
        pool.shutdown()
        let ids = (0..<4).flatMap { caller in (0..<25).map { caller * 100 + $0 } }
        let wrong = ids.filter { results.value($0) != $0 }
        #expect(wrong.isEmpty, "jobs not answered with their own result: \(wrong.prefix(5).map { "\($0): \(results.describe($0))" })")
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

extension HashingPoolTests {
    @Test func workWhoseClientWentAwayIsDroppedUnstarted() throws {
        let (pool, release) = try poolWithItsWorkerHeld(queueCapacity: 4)
        let ran = Counter()
        let cancellations = (0..<3).map { _ in Cancellation() }
        let results = Results()
        let callers = cancellations.enumerated().map { index, cancellation in
            OSThread(name: "caller-\(index)") {
                let result = Result {
                    try pool.run(cancellation: cancellation) {
                        ran.increment(); return index
                    }
                }
                results.append(index, result)
            }
        }
        try waitUntil("the 3 callers' jobs to be queued") { pool.statistics.queued == 3 }
        cancellations[0].cancel()
        cancellations[2].cancel()
        release.open()
        for caller in callers { caller.join() }
        #expect(ran.value == 1)
        #expect(results.value(1) == 1)
        for index in [0, 2] {
            #expect((results.error(index) as? SecurityError)?.code == .cancelled)
        }
        let figures = pool.statistics
        #expect(figures.abandoned == 2 && figures.completed == 2)
        pool.shutdown()
    }

    @Test func aFullPoolFirstFreesThePlacesOfAbandonedWork() throws {
        let (pool, release) = try poolWithItsWorkerHeld(queueCapacity: 2)
        let gone = Cancellation()
        let results = Results()
        let callers = (0..<2).map { index in
            OSThread(name: "gone-\(index)") { results.append(index, Result { try pool.run(cancellation: gone) { index } }) }
        }
        try waitUntil("the 2 callers' jobs to be queued") { pool.statistics.queued == 2 }
        expectSecurityError(.overloaded) { try pool.submit {} }
        #expect(!pool.hasCapacity)
        gone.cancel()
        // Both places come back at once, before the worker is free.
        #expect(pool.hasCapacity)
        try pool.submit {}
        for caller in callers { caller.join() }
        #expect((results.error(0) as? SecurityError)?.code == .cancelled)
        #expect(pool.statistics.abandoned == 2)
        release.open()
        pool.shutdown()
    }

    /// Clients leave while a full pool frees the places of those who left: every caller gets an
    /// answer, whichever way its job goes. (A job whose client left between two reads of its
    /// cancellation was once neither kept nor dropped, and its caller waited forever: a sign-in
    /// stuck on a worker thread, and a server that could not shut down.)
    @Test func everyCallerIsAnsweredWhileClientsLeaveDuringADrop() throws {
        let callersPerRound = 8
        for round in 0..<1_000 {
            let pool = HashingPool(workers: 1, queueCapacity: callersPerRound)
            let release = Gate()
            try pool.submit { release.wait() }
            let cancellations = (0..<callersPerRound).map { _ in Cancellation() }
            let answered = Results()
            let callers = (0..<callersPerRound).map { index in
                OSThread(name: "caller-\(index)") {
                    answered.append(index, Result { try pool.run(cancellation: cancellations[index]) { index } })
                }
            }
            try waitUntil("round \(round): the \(callersPerRound) callers' jobs to be queued") {
                pool.statistics.queued == callersPerRound
            }
            // A full pool: each look for room drops the jobs of clients that left, while they leave.
            let dropper = OSThread(name: "dropper") {
                for _ in 0..<200 { _ = pool.hasCapacity }
            }
            for cancellation in cancellations { cancellation.cancel() }
            dropper.join()
            release.open()
            let deadline = ContinuousClock.now + .seconds(30)
            while answered.order.count < callersPerRound, ContinuousClock.now < deadline { usleep(1_000) }
            let count = answered.order.count
            #expect(count == callersPerRound, "round \(round): \(callersPerRound - count) callers never answered")
            guard count == callersPerRound else { return }  // their threads are stuck: do not join them
            for caller in callers { caller.join() }
            pool.shutdown()
        }
    }

    @Test func interactiveWorkRunsBeforeBulkWork() throws {
        let (pool, release) = try poolWithItsWorkerHeld(queueCapacity: 8)
        let order = Results()
        for index in 0..<3 { try pool.submit(lane: .bulk) { order.append(index, .success(index)) } }
        for index in 10..<12 { try pool.submit(lane: .interactive) { order.append(index, .success(index)) } }
        release.open()
        pool.shutdown()
        #expect(order.order == [10, 11, 0, 1, 2])
    }

    /// A flood's backlog delays another owner by at most one of its jobs: each owner's jobs are
    /// taken in turn (every owner's first, then every owner's second, …), first come first within
    /// a turn.
    @Test func eachOwnerIsServedInTurn() throws {
        let (pool, release) = try poolWithItsWorkerHeld(queueCapacity: 16)
        let order = Results()
        for index in 0..<4 { try pool.submit(owner: "flood") { order.append(index, .success(index)) } }
        try pool.submit(owner: "user") { order.append(10, .success(10)) }
        try pool.submit(owner: "flood") { order.append(4, .success(4)) }
        try pool.submit(owner: "another") { order.append(20, .success(20)) }
        try pool.submit(owner: "user") { order.append(11, .success(11)) }
        release.open()
        pool.shutdown()
        #expect(order.order == [0, 10, 20, 1, 11, 2, 3, 4])
    }

    @Test func bulkWorkHoldsAtMostHalfThePlaces() throws {
        let pool = HashingPool(workers: 1, queueCapacity: 5)  // six places, three for bulk work
        let started = Gate(), release = Gate()
        // The worker holds the first bulk job before anything else is queued: it would otherwise
        // take (and finish) a queued interactive job first, freeing a place (a loaded CI machine
        // did: `hasCapacity` was true below).
        try pool.submit(lane: .bulk) {
            started.open()
            release.wait()
        }
        started.wait()
        for _ in 0..<2 { try pool.submit(lane: .bulk) { release.wait() } }
        expectSecurityError(.overloaded) { try pool.submit(lane: .bulk) {} }
        // The other half is there for interactive work.
        for _ in 0..<3 { try pool.submit(lane: .interactive) {} }
        expectSecurityError(.overloaded) { try pool.submit(lane: .interactive) {} }
        #expect(!pool.hasCapacity)
        release.open()
        pool.shutdown()
        #expect(pool.statistics.completed == 6)
    }
}

/// A request's deadline (`RequestDeadline`): its caller waits no longer, and a job no worker took
/// by then is dropped unhashed. Deadlines are injected (1 s); a check allows 30 s, so that only a
/// caller that waits for its job regardless of the deadline fails it, never a slow machine.
@Suite(.testThreads) struct HashingPoolDeadlineTests {
    @Test func aJobStillQueuedAtItsDeadlineIsDroppedAndItsCallerToldOverloaded() throws {
        let (pool, release) = try poolWithItsWorkerHeld(queueCapacity: 2)
        defer {
            release.open()
            pool.shutdown()
        }
        let ran = Counter(), results = Results()
        let start = ContinuousClock.now
        let caller = OSThread(name: "deadline-caller") {
            let result = Result {
                try pool.run(deadline: .after(.seconds(1))) {
                    ran.increment()
                    return 1
                }
            }
            results.append(0, result)
        }
        // Without the deadline the caller would wait for the worker, which the test holds.
        try waitUntil(timeout: .seconds(20), "the caller to be answered") { results.order == [0] }
        let elapsed = ContinuousClock.now - start
        caller.join()
        #expect((results.error(0) as? SecurityError)?.code == .overloaded, "\(results.describe(0))")
        #expect(elapsed < .seconds(30), "answered after \(elapsed)")
        // Its place is given back and it never runs.
        release.open()
        try waitUntil("the expired job to be dropped") { pool.statistics.expired == 1 }
        try pool.submit {}
        try waitUntil("the worker to finish") { pool.statistics.completed == 2 }
        #expect(ran.value == 0)
        #expect(pool.statistics.abandoned == 0)
    }

    @Test func aJobPastItsDeadlineIsNotQueued() throws {
        let pool = HashingPool(workers: 1)
        defer { pool.shutdown() }
        let ran = Counter()
        expectSecurityError(.overloaded) { _ = try pool.run(deadline: .after(.zero)) { ran.increment() } }
        #expect(ran.value == 0)
        let figures = pool.statistics
        #expect(figures.expired == 1 && figures.completed == 0 && figures.queued == 0)
    }

    /// By default a job has the deadline of the request its caller's thread works for, and work
    /// outside a request has none.
    @Test func theCallingThreadsRequestDeadlineIsTheDefault() throws {
        let pool = HashingPool(workers: 1)
        defer { pool.shutdown() }
        expectSecurityError(.overloaded) { _ = try RequestDeadline.with(.after(.zero)) { try pool.run { 1 } } }
        #expect(try RequestDeadline.with(.after(.seconds(60))) { try pool.run { 2 } } == 2)
        #expect(try pool.run { 3 } == 3)
        #expect(RequestDeadline.current == nil)
    }

    /// A job that is running at its deadline finishes for nobody: its caller has its answer.
    @Test func aCallerStopsWaitingForARunningJobAtTheDeadline() throws {
        let pool = HashingPool(workers: 1)
        let started = Gate(), release = Gate()
        defer {
            release.open()
            pool.shutdown()
        }
        let results = Results()
        let start = ContinuousClock.now
        let caller = OSThread(name: "deadline-caller") {
            let result = Result {
                try pool.run(deadline: .after(.seconds(1))) {
                    started.open()
                    release.wait()
                    return 1
                }
            }
            results.append(0, result)
        }
        started.wait()
        try waitUntil(timeout: .seconds(20), "the caller to be answered") { results.order == [0] }
        let elapsed = ContinuousClock.now - start
        caller.join()
        #expect((results.error(0) as? SecurityError)?.code == .overloaded)
        #expect(elapsed < .seconds(30), "answered after \(elapsed)")
        release.open()
        try waitUntil("the job to finish") { pool.statistics.completed == 1 }
    }
}

/// Results of concurrent callers by index, and the order they arrived in.
private final class Results: @unchecked Sendable {
    private let lock = ConditionLock()
    private var results: [Int: Result<Int, any Error>] = [:]
    private var arrival: [Int] = []

    func append(_ index: Int, _ result: Result<Int, any Error>) {
        lock.withLock {
            results[index] = result
            arrival.append(index)
        }
    }

    var order: [Int] { lock.withLock { arrival } }
    func value(_ index: Int) -> Int? { lock.withLock { try? results[index]?.get() } }
    /// What `index` got, for a failure message.
    func describe(_ index: Int) -> String { lock.withLock { results[index].map { "\($0)" } ?? "nothing" } }
    func error(_ index: Int) -> (any Error)? {
        lock.withLock {
            guard case .failure(let error)? = results[index] else { return nil }
            return error
        }
    }
}

private final class Counter: @unchecked Sendable {
    private let lock = ConditionLock()
    private var count = 0

    func increment() { lock.withLock { count += 1 } }
    var value: Int { lock.withLock { count } }
}
