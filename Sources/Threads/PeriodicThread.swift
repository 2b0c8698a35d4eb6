import Synchronization

/// A thread that runs a task every interval until `stop()`, which wakes it at once (it does not
/// sleep out the interval) and waits for it to end.
public final class PeriodicThread: Sendable {
    private let name: String
    private let intervalNanoseconds: UInt64
    private let lock = ConditionLock()
    private let state = Mutex<(stopping: Bool, thread: OSThread?)>((false, nil))

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
                    _ = lock.wait(untilMonotonicNanoseconds: monotonicNanoseconds() + intervalNanoseconds)
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
