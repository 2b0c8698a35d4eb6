/// A fixed set of threads running submitted work from a bounded queue.
///
/// Work that blocks (database round trips, password hashing) runs here, never on an event loop.
/// A full queue refuses new work at once, so an overload turns into fast `503`s rather than
/// unbounded memory and latency.
public final class BoundedThreadPool: @unchecked Sendable {
    /// Figures for metrics.
    public struct Statistics: Sendable, Equatable {
        public var threads: Int
        public var busy: Int
        public var queued: Int
        public var rejected: Int
        public var completed: Int
    }

    public let name: String
    public let threadCount: Int
    public let queueLimit: Int

    private let lock = ConditionLock()
    private var queue: [(@Sendable () -> Void)?] = []
    private var head = 0
    private var busy = 0
    private var rejected = 0
    private var completed = 0
    private var stopping = false
    private var threads: [OSThread] = []

    public init(name: String, threads: Int, queueLimit: Int, stackSize: Int = 1 << 20) {
        precondition(threads > 0 && queueLimit >= 0)
        self.name = name
        self.threadCount = threads
        self.queueLimit = queueLimit
        for index in 0..<threads {
            self.threads.append(OSThread(name: "\(name)-\(index)", stackSize: stackSize) { [unowned self] in self.workLoop() })
        }
    }

    /// Queues work; false (and nothing queued) when the queue is full or the pool is stopping.
    @discardableResult
    public func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        let waiting = queue.count - head
        // Idle threads take work at once, so only work beyond them counts against the queue.
        guard !stopping, waiting < queueLimit + (threadCount - busy) else {
            rejected += 1
            return false
        }
        queue.append(work)
        lock.signal()
        return true
    }

    public var statistics: Statistics {
        lock.withLock {
            Statistics(threads: threadCount, busy: busy, queued: queue.count - head, rejected: rejected, completed: completed)
        }
    }

    /// Runs what is queued, then stops and joins the threads.
    public func shutdown() {
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
        for thread in threads { thread.join() }
        threads = []
    }

    private func workLoop() {
        lock.lock()
        while true {
            while head == queue.count, !stopping { lock.wait() }
            if head == queue.count, stopping { break }
            let work = queue[head]!
            queue[head] = nil
            head += 1
            if head == queue.count {
                queue.removeAll(keepingCapacity: true)
                head = 0
            } else if head > 1024 {
                queue.removeFirst(head)
                head = 0
            }
            busy += 1
            lock.unlock()
            work()
            lock.lock()
            busy -= 1
            completed += 1
        }
        lock.unlock()
    }
}
