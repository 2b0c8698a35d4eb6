import Glibc

/// A pthread mutex with one condition variable, for threads that wait for work or for a slot.
///
/// Both live in heap memory that never moves, as pthreads requires.
public final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }

    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits for a signal; call with the lock held and re-check what you wait for (wake-ups may be spurious).
    public func wait() { pthread_cond_wait(condition, mutex) }

    /// Locks, waits until `predicate` holds, runs `body` and unlocks.
    public func withLock<T>(when predicate: () -> Bool, _ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        while !predicate() { wait() }
        return try body()
    }

    /// Waits for a signal until a monotonic deadline in nanoseconds; false on timeout.
    @discardableResult
    public func wait(untilMonotonicNanoseconds deadline: UInt64) -> Bool {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        return pthread_cond_timedwait(condition, mutex, &ts) == 0
    }

    public func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }
}

/// Monotonic clock in nanoseconds.
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

extension Duration {
    /// The duration in whole nanoseconds (negative durations count as zero), for deadlines on
    /// `monotonicNanoseconds()`.
    public var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds)) / 1_000_000_000
    }
}
