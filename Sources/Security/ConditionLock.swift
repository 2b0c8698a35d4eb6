import Glibc

/// A pthread mutex with one condition variable, both on the heap so they never move (a
/// `pthread_mutex_t` or `pthread_cond_t` inside a Swift value may be moved, which POSIX forbids).
///
/// `Synchronization.Mutex` cannot be waited on with a condition variable, hence this type.
final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        precondition(pthread_cond_init(condition, nil) == 0, "pthread_cond_init failed")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deinitialize(count: 1)
        condition.deallocate()
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    func lock() {
        let result = pthread_mutex_lock(mutex)
        precondition(result == 0, "pthread_mutex_lock failed: \(result)")
    }

    func unlock() {
        let result = pthread_mutex_unlock(mutex)
        precondition(result == 0, "pthread_mutex_unlock failed: \(result)")
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits for a signal; call with the lock held, and re-check the awaited state afterwards
    /// (wake-ups may be spurious).
    func wait() {
        let result = pthread_cond_wait(condition, mutex)
        precondition(result == 0, "pthread_cond_wait failed: \(result)")
    }

    /// Locks, waits until `predicate` holds, runs `body` and unlocks.
    func withLock<T>(when predicate: () -> Bool, _ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        while !predicate() { wait() }
        return try body()
    }

    func signal() { pthread_cond_signal(condition) }

    func broadcast() { pthread_cond_broadcast(condition) }
}
