import Glibc

/// The instant by which the request a thread works for must be answered, on the monotonic clock.
///
/// The server sets one per request (`--request-timeout`, below a proxy's own timeout) around the
/// handler's run on its worker thread (`with(_:_:)`), and every wait of that request honours it:
/// a database connection's acquire, connect and round trips, and a password hash's queue. Each
/// keeps its own bound too and waits for the earlier of the two, so that in an outage the request
/// is answered with a fast `503` rather than by the proxy's `504` after the sum of the bounds.
/// Work outside a request (background threads, commands) has none and waits as it always did.
public struct RequestDeadline: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The deadline on `monotonicNanoseconds()`.
    public let uptimeNanoseconds: UInt64

    public init(uptimeNanoseconds: UInt64) {
        // 0 stands for "none" in the thread's slot; no clock reading is 0.
        self.uptimeNanoseconds = max(1, uptimeNanoseconds)
    }

    /// `duration` from now.
    public static func after(_ duration: Duration) -> RequestDeadline {
        RequestDeadline(uptimeNanoseconds: monotonicNanoseconds() &+ duration.nanoseconds)
    }

    /// What is left of it (zero once it has passed).
    public var remaining: Duration {
        let now = monotonicNanoseconds()
        return .nanoseconds(Int64(clamping: uptimeNanoseconds > now ? uptimeNanoseconds - now : 0))
    }

    public var hasPassed: Bool { monotonicNanoseconds() >= uptimeNanoseconds }

    public static func < (lhs: RequestDeadline, rhs: RequestDeadline) -> Bool {
        lhs.uptimeNanoseconds < rhs.uptimeNanoseconds
    }

    public var description: String { "RequestDeadline(in \(remaining))" }

    // MARK: - The calling thread's

    /// The deadline of the request the calling task or thread works for; nil outside a request.
    /// A task's (`with(_:_:)`, async) comes first: a request's task may resume on any thread.
    public static var current: RequestDeadline? {
        if let ofTask = ofTask { return ofTask }
        let bits = UInt(bitPattern: pthread_getspecific(slot))
        return bits == 0 ? nil : RequestDeadline(uptimeNanoseconds: UInt64(bits))
    }

    /// The deadline of the request a task works for (the server's request tasks bind it).
    @TaskLocal private static var ofTask: RequestDeadline?

    /// Runs `body` with `deadline` as the calling task's: every wait in it, on whichever thread
    /// the task runs, honours it.
    public static func with<T>(_ deadline: RequestDeadline?, _ body: () async throws -> T) async rethrows -> T {
        try await $ofTask.withValue(deadline, operation: body)
    }

    /// Runs `body` with `deadline` as the calling thread's (nil: none), and restores the previous
    /// one after, so that a pool thread carries nothing from one job to the next.
    public static func with<T>(_ deadline: RequestDeadline?, _ body: () throws -> T) rethrows -> T {
        let previous = pthread_getspecific(slot)
        pthread_setspecific(slot, UnsafeRawPointer(bitPattern: UInt(deadline?.uptimeNanoseconds ?? 0)))
        defer { pthread_setspecific(slot, previous) }
        return try body()
    }

    /// The earlier of `own` (a bound's deadline, on `monotonicNanoseconds()`) and the calling
    /// thread's request deadline.
    public static func bounding(_ own: UInt64) -> UInt64 {
        guard let current else { return own }
        return min(own, current.uptimeNanoseconds)
    }

    /// The thread-specific slot: the deadline's nanoseconds as the pointer's bits (no allocation;
    /// 64-bit platforms only), 0 for none.
    private static let slot: pthread_key_t = {
        precondition(MemoryLayout<UInt>.size == MemoryLayout<UInt64>.size, "RequestDeadline needs 64-bit pointers")
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()
}
