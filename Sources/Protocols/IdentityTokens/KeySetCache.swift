import FoundationEssentials
import Synchronization

/// A provider's key set as this instance last fetched it, fetched again when its `Cache-Control`
/// lifetime ends or when a token names a key it does not hold (the provider rotated its keys), at
/// most once per `refetchInterval` for the latter, so random `kid`s cannot make it fetch on every
/// request. A token whose key is unknown while a fetch was made too recently waits (suspended,
/// holding no thread) for the next allowed fetch when it comes within `longestWait`, so that a
/// flood of forged `kid`s never gets an honest token of a newly published key refused. When a
/// fetch fails the last good set stays in use, and the next attempt waits `refetchInterval`; with
/// no set ever fetched, `verify` throws `unavailable`.
///
/// One fetch at a time: requests that find the set stale while another fetches wait for it.
public final class KeySetCache: Sendable {
    /// A fetched document: its body and its `Cache-Control` field.
    public struct Fetched: Sendable {
        public var body: [UInt8]
        public var cacheControl: String?
        public init(body: [UInt8], cacheControl: String?) {
            self.body = body
            self.cacheControl = cacheControl
        }
    }

    /// No key set was ever fetched (the provider unreachable or answering nonsense since start).
    public struct Unavailable: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public typealias Fetch = @Sendable () throws -> Fetched
    /// Suspends for the seconds given (`Task.sleep`; tests record them instead).
    public typealias Sleep = @Sendable (Double) async throws -> Void

    /// Lifetimes the provider asks for are kept within these bounds; without `max-age`, `defaultLifetime`.
    public struct Timing: Sendable {
        public var defaultLifetime: Double = 3_600
        public var minimumLifetime: Double = 60
        public var maximumLifetime: Double = 86_400
        /// The least time between fetches that a failure or an unknown `kid` causes.
        public var refetchInterval: Double = 5
        /// The longest a token of an unknown key waits for the next allowed fetch; beyond it, refused.
        public var longestWait: Double = 5
        public init() {}
    }

    private struct State {
        var keys: JSONWebKeySet?
        var freshUntil = Date.distantPast
        /// When the last fetch started, whatever its outcome.
        var lastAttempt = Date.distantPast
        var fetches = 0
        var lastFailure: String?
    }

    private let fetch: Fetch
    private let sleep: Sleep
    private let timing: Timing
    private let state = Mutex(State())
    /// Held while fetching: one fetch at a time, the others wait and then read its result.
    private let fetching = Mutex(())

    public init(
        timing: Timing = Timing(), sleep: @escaping Sleep = { try await Task.sleep(for: .milliseconds(Int(($0 * 1000).rounded(.up)))) },
        fetch: @escaping Fetch
    ) {
        self.timing = timing
        self.sleep = sleep
        self.fetch = fetch
    }

    /// How many fetches were started, for metrics and tests.
    public var fetchCount: Int { state.withLock { $0.fetches } }

    /// Checks `token` with the provider's current keys (`IDToken.verify`), fetching them first when
    /// stale, and again once when the token's `kid` is not among them: at once when a fetch is
    /// allowed, else after waiting for the next allowed one (when it comes within `longestWait`).
    /// `now` is the clock of the checks; the waits are real.
    public func verify(
        _ token: String, expecting expected: IDToken.Expectations, nonce: String?, now: Date = Date()
    ) async throws -> IDToken {
        let keys = try current(now: now, refetchFor: nil).keys
        do {
            return try IDToken.verify(token, keys: keys, expecting: expected, nonce: nonce, now: now)
        } catch IDToken.Failure.unknownKey(let keyID) {
            var (refreshed, nextFetch) = try current(now: now, refetchFor: keyID)
            var checkedAt = now
            // Fetched too recently: wait for the next allowed fetch, which one of the waiters makes.
            if let nextFetch, case let wait = nextFetch.timeIntervalSince(now), wait <= timing.longestWait {
                try await sleep(wait)
                checkedAt = nextFetch
                refreshed = try current(now: checkedAt, refetchFor: keyID).keys
            }
            return try IDToken.verify(token, keys: refreshed, expecting: expected, nonce: nonce, now: checkedAt)
        }
    }

    /// The keys to check with: the held set while fresh (and holding `refetchFor` when one is
    /// named); otherwise the result of a fetch, or the held set when the fetch fails or one was
    /// tried too recently (then with the time the next fetch is allowed).
    private func current(now: Date, refetchFor keyID: String?) throws -> (keys: JSONWebKeySet, nextFetch: Date?) {
        func usable(_ state: State) -> JSONWebKeySet? {
            guard let keys = state.keys else { return nil }
            if let keyID, keys.keys[keyID] == nil { return nil }
            return now < state.freshUntil ? keys : nil
        }
        if let keys = state.withLock({ usable($0) }) { return (keys, nil) }
        return try fetching.withLock { _ in
            // Another request may have fetched while this one waited.
            let (held, nextFetch) = state.withLock { state in
                (usable(state), state.lastAttempt.addingTimeInterval(timing.refetchInterval))
            }
            if let held { return (held, nil) }
            if now < nextFetch { return (try lastGood(), nextFetch) }
            state.withLock {
                $0.lastAttempt = now
                $0.fetches += 1
            }
            do {
                let fetched = try fetch()
                let keys = try JSONWebKeySet(json: fetched.body)
                let lifetime = Self.lifetime(cacheControl: fetched.cacheControl, timing)
                state.withLock {
                    $0.keys = keys
                    $0.freshUntil = now.addingTimeInterval(lifetime)
                    $0.lastFailure = nil
                }
                return (keys, nil)
            } catch {
                state.withLock { $0.lastFailure = String(describing: error) }
                return (try lastGood(), nil)
            }
        }
    }

    private func lastGood() throws -> JSONWebKeySet {
        try state.withLock { state in
            guard let keys = state.keys else {
                throw Unavailable(description: "no key set was fetched yet: \(state.lastFailure ?? "not tried")")
            }
            return keys
        }
    }

    /// `max-age` of a `Cache-Control` field within the bounds; `no-store`/`no-cache` count as the
    /// least lifetime (a provider's keys are fetched for every token by nobody).
    public static func lifetime(cacheControl: String?, _ timing: Timing) -> Double {
        var lifetime = timing.defaultLifetime
        for directive in (cacheControl ?? "").split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map {
                String($0.drop { $0 == " " || $0 == "\t" || $0 == "\"" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\"" }.reversed())
                    .lowercased()
            }
            switch parts.first {
            case "max-age":
                if parts.count == 2, let seconds = Double(parts[1]), seconds.isFinite {
                    lifetime = seconds
                }
            case "no-store", "no-cache": return timing.minimumLifetime
            default: continue
            }
        }
        return min(max(lifetime, timing.minimumLifetime), timing.maximumLifetime)
    }
}
