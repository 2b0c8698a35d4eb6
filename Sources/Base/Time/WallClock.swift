import FoundationEssentials
import Synchronization

/// The time of day that lifetimes, throttle windows and expiries are measured against: real time,
/// plus an offset that only tests move (`advance(by:)`), so that a test moves time instead of
/// waiting for it.
///
/// Every instance that shares a database must share one clock: rows written by one are read
/// against another's `now()`. Durations that bound real work (timeouts, the session cache's
/// freshness, pacing) stay on the monotonic clock; this one is for dates that are stored or compared
/// with stored ones.
public final class WallClock: Sendable {
    /// Real time, never moved.
    public static let system = WallClock()

    private let offsetNanoseconds = Atomic<Int64>(0)

    /// A clock at real time; `advance(by:)` moves it forward.
    public init() {}

    /// The current time of this clock.
    public func now() -> Date {
        Date().addingTimeInterval(Double(offsetNanoseconds.load(ordering: .relaxed)) / 1e9)
    }

    /// Moves this clock `seconds` forward, for everyone reading it.
    public func advance(by seconds: Double) {
        precondition(seconds >= 0, "a wall clock only moves forward")
        precondition(self !== WallClock.system, "the system clock is real time")
        offsetNanoseconds.add(Int64(seconds * 1e9), ordering: .relaxed)
    }
}
