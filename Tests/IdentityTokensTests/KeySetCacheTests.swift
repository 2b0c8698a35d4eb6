import Foundation
import IdentityTokens
import Synchronization
import TestSupport
import Testing

/// The key set's cache without a network: a fetch that serves what the test says (or fails), and
/// the clock the test gives.
@Suite(.testThreads) struct KeySetCacheTests {
    /// A provider: its served set (nil: unreachable) and how often it was asked.
    final class Provider: Sendable {
        let served = Mutex<String?>(nil)
        let cacheControl = Mutex<String?>(nil)
        let fetches = Atomic<Int>(0)

        func fetch() throws -> KeySetCache.Fetched {
            fetches.add(1, ordering: .relaxed)
            guard let text = served.withLock({ $0 }) else { throw TestFailure("unreachable") }
            return KeySetCache.Fetched(body: Array(text.utf8), cacheControl: cacheControl.withLock { $0 })
        }
    }

    static let start = IDTokenTests.now
    static var expected: IDToken.Expectations { IDTokenTests.expected }

    static func token(keyID: String = "rsa-1") throws -> String {
        // Valid for a day from the tests' clock: the cache's own times go past an hour.
        try IDTokenTests.token(header: #"{"alg": "RS256", "kid": "\#(keyID)"}"#, claims: IDTokenTests.claims(expiresIn: 86_400), keyFile: "rsa.pem")
    }

    /// The RSA key of `IDTokenTests` under `keyID`.
    static func keySet(_ keyID: String) throws -> String {
        let json = try IDTokenTests.keys.get().json
        let line = try #require(json.split(separator: "\n").first { $0.contains(#""kid": "rsa-1""#) })
        return #"{"keys": ["#
            + line.replacingOccurrences(of: #""kid": "rsa-1""#, with: #""kid": "\#(keyID)""#).trimmingCharacters(in: CharacterSet(charactersIn: " ,"))
            + "]}"
    }

    @Test func fetchedOnceWhileFreshAgainWhenStale() throws {
        let provider = Provider()
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        provider.cacheControl.withLock { $0 = "public, max-age=600, must-revalidate" }
        let cache = KeySetCache { try provider.fetch() }
        let token = try Self.token()
        for second in [0.0, 1, 599] {
            _ = try cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + second)
        }
        #expect(provider.fetches.load(ordering: .relaxed) == 1)
        _ = try cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 601)
        #expect(provider.fetches.load(ordering: .relaxed) == 2)
    }

    @Test func lifetimesAreBounded() {
        var timing = KeySetCache.Timing()
        timing.defaultLifetime = 3_600
        #expect(KeySetCache.lifetime(cacheControl: nil, timing) == 3_600)
        #expect(KeySetCache.lifetime(cacheControl: "max-age=20000", timing) == 20_000)
        #expect(KeySetCache.lifetime(cacheControl: "max-age=5", timing) == 60)
        #expect(KeySetCache.lifetime(cacheControl: "max-age=999999999", timing) == 86_400)
        #expect(KeySetCache.lifetime(cacheControl: "no-store", timing) == 60)
        #expect(KeySetCache.lifetime(cacheControl: "max-age=\"120\"", timing) == 120)
        #expect(KeySetCache.lifetime(cacheControl: "max-age=nan", timing) == 3_600)
    }

    @Test func anUnknownKeyRefetchesAtMostOncePerInterval() throws {
        let provider = Provider()
        provider.served.withLock { $0 = try? Self.keySet("old") }
        var timing = KeySetCache.Timing()
        timing.refetchInterval = 30
        let cache = KeySetCache(timing: timing) { try provider.fetch() }
        #expect(throws: IDToken.Failure.unknownKey("rsa-1")) {
            try cache.verify(try Self.token(), expecting: Self.expected, nonce: nil, now: Self.start)
        }
        #expect(provider.fetches.load(ordering: .relaxed) == 1, "the fetch that found the set was just made")
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        // Within the interval the rotated set is not asked for; after it, once.
        for second in [1.0, 10, 29] {
            #expect(throws: IDToken.Failure.self) {
                try cache.verify(try Self.token(), expecting: Self.expected, nonce: nil, now: Self.start + second)
            }
        }
        #expect(provider.fetches.load(ordering: .relaxed) == 1)
        _ = try cache.verify(try Self.token(), expecting: Self.expected, nonce: nil, now: Self.start + 31)
        #expect(provider.fetches.load(ordering: .relaxed) == 2)
    }

    @Test func theLastGoodSetServesWhileTheProviderIsDown() throws {
        let provider = Provider()
        var timing = KeySetCache.Timing()
        timing.refetchInterval = 10
        let cache = KeySetCache(timing: timing) { try provider.fetch() }
        let token = try Self.token()
        #expect(throws: KeySetCache.Unavailable.self) { try cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start) }
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        // Ten seconds between attempts, even when none ever succeeded.
        #expect(throws: KeySetCache.Unavailable.self) { try cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 5) }
        _ = try cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 10)
        provider.served.withLock { $0 = nil }
        // Stale (an hour by default) and the provider down: the set stays, tried again each 10 s.
        _ = try cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 3_700)
        _ = try cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 3_705)
        #expect(provider.fetches.load(ordering: .relaxed) == 3)
        // Nonsense from the provider is a failure like any other: the good set stays.
        provider.served.withLock { $0 = #"{"keys": "# }
        _ = try cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 3_720)
        #expect(provider.fetches.load(ordering: .relaxed) == 4)
    }

    /// Many requests finding the set stale at once: one fetch, and all of them checked with its keys.
    @Test func oneFetchForManyWaiters() throws {
        let provider = Provider()
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        let cache = KeySetCache { try provider.fetch() }
        let token = try Self.token()
        try onThreads(16) { _ in _ = try cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start) }
        #expect(provider.fetches.load(ordering: .relaxed) == 1)
    }
}
