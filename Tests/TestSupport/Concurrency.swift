import Glibc
import Synchronization

/// Runs `body(index)` on `count` new threads at once (real threads, not the cooperative pool, so
/// requests really overlap) and waits for all of them.
public func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let threads = (0..<count).map { index -> pthread_t in
        var thread = pthread_t()
        let box = Unmanaged.passRetained(Box { body(index) }).toOpaque()
        let status = pthread_create(&thread, nil, { raw in
            Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
        precondition(status == 0)
        return thread
    }
    threads.forEach { pthread_join($0, nil) }
}

/// All threads wait in `arrive()` until `count` have arrived (or a timeout passes), so their
/// work starts together.
public final class Barrier: Sendable {
    public let count: Int
    let arrived = Atomic<Int>(0)
    public init(_ count: Int) { self.count = count }

    public func arrive(timeout: Duration = .seconds(10)) {
        arrived.add(1, ordering: .sequentiallyConsistent)
        let start = ContinuousClock.now
        while arrived.load(ordering: .sequentiallyConsistent) < count, ContinuousClock.now - start < timeout {
            usleep(100)
        }
    }
}
