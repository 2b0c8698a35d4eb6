import Synchronization

/// A thread that runs a task every interval, or at once when `wake()` asks, until `stop()`, which
/// wakes it at once (it does not sleep out the interval) and waits for it to end.
public final class PeriodicThread: Sendable {
    private let name: String
    private let intervalNanoseconds: UInt64
    private let lock = ConditionLock()
    private let state = Mutex<(stopping: Bool, woken: Bool, thread: OSThread?)>((false, false, nil))

    public init(name: String, intervalNanoseconds: UInt64) {
        self.name = name
        self.intervalNanoseconds = intervalNanoseconds
    }

    /// Starts the thread: `task` runs after each interval, the first one included.
    public func start(_ task: @escaping @Sendable () -> Void) {
        let thread = OSThread(name: name) { [self] in
            while true {
                let stopping = lock.withLock { () -> Bool in
                    if isStopping { return true }
                    // A wake that came while the task ran is not lost: it skips this wait.
                    if !takeWake() {
                        _ = lock.wait(untilMonotonicNanoseconds: monotonicNanoseconds() + intervalNanoseconds)
                        _ = takeWake()
                    }
                    return isStopping
                }
                if stopping { return }
                task()
            }
        }
        state.withLock { $0.thread = thread }
    }

    /// Whether `stop` was called: a long task may check it between its steps.
    public var isStopping: Bool { state.withLock { $0.stopping } }

    /// Runs the task as soon as the thread is free, without waiting out the interval.
    public func wake() {
        lock.withLock {
            state.withLock { $0.woken = true }
            lock.signal()
        }
    }

    private func takeWake() -> Bool {
        state.withLock { state in
            defer { state.woken = false }
            return state.woken
        }
    }

    /// Wakes the thread and waits for it (and for a task it is running) to end.
    public func stop() {
        let thread = state.withLock { state -> OSThread? in
            state.stopping = true
            defer { state.thread = nil }
            return state.thread
        }
        lock.withLock { lock.signal() }
        thread?.join()
    }
}
