import Glibc
import Synchronization

/// Starts `body` on a new thread (a real one, not the cooperative pool's) and returns it, to be
/// joined or detached.
public func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var thread = pthread_t()
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    let status = pthread_create(
        &thread, nil,
        { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
    precondition(status == 0, "pthread_create: \(status)")
    return thread
}

/// Runs `body(index)` on `count` new threads at once (real threads, not the cooperative pool, so
/// requests really overlap) and waits for all of them.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let threads = (0..<count).map { index in startThread { body(index) } }
    threads.forEach { pthread_join($0, nil) }
}

/// `onThreads` for a body that may throw (a `Barrier` that timed out, say): waits for all the
/// threads, then throws the error of the lowest-numbered thread that threw, so that the test
/// fails instead of carrying on.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) throws -> Void) throws {
    let errors = Mutex<[(index: Int, error: any Error)]>([])
    onThreads(count) { index in
        do {
            try body(index)
        } catch {
            errors.withLock { $0.append((index, error)) }
        }
    }
    if let first = errors.withLock({ $0.min { $0.index < $1.index } }) {
        throw first.error
    }
}

/// A `Barrier` whose threads did not all arrive in time: the work it was to line up did not
/// start together, so whatever the test measures next proves nothing.
public struct BarrierTimeout: Error, CustomStringConvertible {
    public let arrived: Int
    public let expected: Int
    public let timeout: Duration
    public var description: String {
        "barrier timed out after \(timeout): \(arrived) of \(expected) threads arrived"
    }
}

/// All threads wait in `arrive()` until `count` have arrived, so their work starts together. A
/// thread that waits longer than the timeout throws `BarrierTimeout` (run the threads with the
/// throwing `onThreads`, which hands that error to the test).
public final class Barrier: Sendable {
    public let count: Int
    let arrived = Atomic<Int>(0)
    public init(_ count: Int) { self.count = count }

    public func arrive(timeout: Duration = .seconds(30)) throws {
        arrived.add(1, ordering: .sequentiallyConsistent)
        let start = ContinuousClock.now
        while arrived.load(ordering: .sequentiallyConsistent) < count {
            guard ContinuousClock.now - start < timeout else {
                throw BarrierTimeout(arrived: arrived.load(ordering: .sequentiallyConsistent), expected: count, timeout: timeout)
            }
            usleep(100)
        }
    }
}
