import Glibc
import Synchronization
import Testing

/// Where the tests run: on threads of their own, never on Swift's cooperative pool.
///
/// Most tests block: they call a server over a socket and wait, join threads, wait for a child
/// process. On the cooperative pool (one thread per core, two here) a blocking test holds a
/// thread that every asynchronous test and every task a test starts (a live-changes collector,
/// the client library's stream producer) needs, so an asynchronous wait could be starved for
/// minutes by tests queued before it. Under `.testThreads` a test's body runs on a `TestThreads`
/// thread instead, and the cooperative pool stays free for the tasks that are made for it.
///
/// How many tests run at once is a decision, not an accident of the pool's width: `testLimit`
/// test cases (default four, `EXOSPHERE_TEST_PARALLELISM` to change it) and `serverLimit` suites
/// that hold a live server of their own.
public final class TestThreads: TaskExecutor, @unchecked Sendable {
    /// The executor every `.testThreads` suite runs on.
    public static let shared = TestThreads()

    /// Test cases that run at once.
    public static let testLimit = AsyncLimit(parallelism(default: 4))
    /// Suites with a server of their own (`.liveServer`) that are up at once.
    public static let serverLimit = AsyncLimit(max(1, parallelism(default: 4) - 1))

    private static func parallelism(default value: Int) -> Int {
        guard let text = getenv("EXOSPHERE_TEST_PARALLELISM"), let number = Int(String(cString: text)), number > 0 else {
            return value
        }
        return number
    }

    private var mutex = pthread_mutex_t()
    private var condition = pthread_cond_t()
    private var jobs: [UnownedJob] = []
    private var next = 0
    private var idle = 0

    private init() {
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&condition, nil)
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pthread_mutex_lock(&mutex)
        jobs.append(job)
        let waiting = jobs.count - next
        // A job never waits for a thread that is busy: it wakes an idle one or gets a new one.
        let spawn = waiting > idle
        if !spawn { pthread_cond_signal(&condition) }
        pthread_mutex_unlock(&mutex)
        if spawn { addThread() }
    }

    private func addThread() {
        pthread_detach(startThread { [self] in work() })
    }

    private func work() -> Never {
        while true {
            pthread_mutex_lock(&mutex)
            while next == jobs.count {
                idle += 1
                pthread_cond_wait(&condition, &mutex)
                idle -= 1
            }
            let job = jobs[next]
            next += 1
            if next == jobs.count {
                jobs.removeAll(keepingCapacity: true)
                next = 0
            }
            pthread_mutex_unlock(&mutex)
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }

    /// Runs `body` on a test thread, holding a place of `limit` (none when nil) meanwhile.
    public static func run<T: Sendable>(
        holding limit: AsyncLimit?, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        await limit?.acquire()
        defer { limit?.release() }
        return try await withTaskExecutorPreference(shared) { try await body() }
    }
}

/// A counting semaphore for tasks: `acquire` suspends (it holds no thread) until a place is free;
/// waiters are served in the order they came.
public final class AsyncLimit: Sendable {
    private struct State {
        var available: Int
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state: Mutex<State>

    public init(_ places: Int) { state = Mutex(State(available: places)) }

    public func acquire() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { state -> Bool in
                if state.available > 0 {
                    state.available -= 1
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if granted { continuation.resume() }
        }
    }

    public func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiters.isEmpty {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst()
        }
        next?.resume()
    }
}

/// Runs every test of the suite (and of its nested suites) on `TestThreads`, holding a place of
/// `TestThreads.testLimit`. Every top-level suite declares it (`scripts/check-test-suites.sh`).
public struct TestThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await TestThreads.run(holding: TestThreads.testLimit, function)
    }
}

extension Trait where Self == TestThreadsTrait {
    /// The suite's tests run on threads of their own, off the cooperative pool (`TestThreads`).
    public static var testThreads: Self { TestThreadsTrait() }
}
