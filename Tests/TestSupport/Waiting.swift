import Glibc

/// A condition that did not become true before its deadline.
public struct WaitTimeout: Error, CustomStringConvertible {
    public let what: String
    public let timeout: Duration
    public var description: String { "timed out after \(timeout) waiting for \(what)" }
}

/// Polls `condition` every `interval` until it is true; throws `WaitTimeout` once `timeout` has
/// passed without it. For tests that must wait for something to happen: the deadline is
/// generous because a loaded machine is slow, and the wait ends as soon as the condition holds.
public func waitUntil(
    timeout: Duration = .seconds(30), pollingEvery interval: Duration = .milliseconds(20),
    _ what: @autoclosure () -> String = "the condition", _ condition: () throws -> Bool
) throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else { throw WaitTimeout(what: what(), timeout: timeout) }
        let microseconds = interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000
        usleep(useconds_t(max(1, microseconds)))
    }
}
