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

    @Test func fetchedOnceWhileFreshAgainWhenStale() async throws {
        let provider = Provider()
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        provider.cacheControl.withLock { $0 = "public, max-age=600, must-revalidate" }
        let cache = KeySetCache { try provider.fetch() }
        let token = try Self.token()
        for second in [0.0, 1, 599] {
            _ = try await cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + second)
        }
        #expect(provider.fetches.load(ordering: .relaxed) == 1)
        _ = try await cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 601)
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

    @Test func anUnknownKeyRefetchesAtMostOncePerInterval() async throws {
        let provider = Provider()
        provider.served.withLock { $0 = try? Self.keySet("old") }
        var timing = KeySetCache.Timing()
        timing.refetchInterval = 30
        let cache = KeySetCache(timing: timing) { try provider.fetch() }
        await #expect(throws: IDToken.Failure.unknownKey("rsa-1")) {
            try await cache.verify(try Self.token(), expecting: Self.expected, nonce: nil, now: Self.start)
        }
        #expect(provider.fetches.load(ordering: .relaxed) == 1, "the fetch that found the set was just made")
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        // Within the interval (and more than the longest wait before its end) the rotated set is not
        // asked for; after it, once.
        for second in [1.0, 10, 24] {
            await #expect(throws: IDToken.Failure.self) {
                try await cache.verify(try Self.token(), expecting: Self.expected, nonce: nil, now: Self.start + second)
            }
        }
        #expect(provider.fetches.load(ordering: .relaxed) == 1)
        _ = try await cache.verify(try Self.token(), expecting: Self.expected, nonce: nil, now: Self.start + 31)
        #expect(provider.fetches.load(ordering: .relaxed) == 2)
    }

    @Test func theLastGoodSetServesWhileTheProviderIsDown() async throws {
        let provider = Provider()
        var timing = KeySetCache.Timing()
        timing.refetchInterval = 10
        let cache = KeySetCache(timing: timing) { try provider.fetch() }
        let token = try Self.token()
        await #expect(throws: KeySetCache.Unavailable.self) { try await cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start) }
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        // Ten seconds between attempts, even when none ever succeeded.
        await #expect(throws: KeySetCache.Unavailable.self) {
            try await cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 5)
        }
        _ = try await cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 10)
        provider.served.withLock { $0 = nil }
        // Stale (an hour by default) and the provider down: the set stays, tried again each 10 s.
        _ = try await cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 3_700)
        _ = try await cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 3_705)
        #expect(provider.fetches.load(ordering: .relaxed) == 3)
        // Nonsense from the provider is a failure like any other: the good set stays.
        provider.served.withLock { $0 = #"{"keys": "# }
        _ = try await cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start + 3_720)
        #expect(provider.fetches.load(ordering: .relaxed) == 4)
    }

    /// Many requests finding the set stale at once: one fetch, and all of them checked with its keys.
    @Test func oneFetchForManyWaiters() async throws {
        let provider = Provider()
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        let cache = KeySetCache { try provider.fetch() }
        let token = try Self.token()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<16 { group.addTask { _ = try await cache.verify(token, expecting: Self.expected, nonce: nil, now: Self.start) } }
            try await group.waitForAll()
        }
        #expect(provider.fetches.load(ordering: .relaxed) == 1)
    }

    /// Records the waits it is asked for instead of waiting.
    final class Waits: Sendable {
        let seconds = Mutex<[Double]>([])
        var sleep: KeySetCache.Sleep { { seconds in self.seconds.withLock { $0.append(seconds) } } }
    }

    /// A forged `kid` made a fetch just now: a token of the key the provider has just published
    /// waits for the next allowed fetch, and passes (it used to be refused as "signed by an
    /// unknown key" for the rest of the interval). A wait beyond `longestWait` is not made.
    @Test func aNewKeyWaitsForTheNextAllowedFetchInsteadOfBeingRefused() async throws {
        let provider = Provider()
        provider.served.withLock { $0 = try? Self.keySet("old") }
        let waits = Waits()
        let cache = KeySetCache(sleep: waits.sleep) { try provider.fetch() }
        _ = try await cache.verify(try Self.token(keyID: "old"), expecting: Self.expected, nonce: nil, now: Self.start)
        await #expect(throws: IDToken.Failure.unknownKey("forged")) {
            try await cache.verify(try Self.token(keyID: "forged"), expecting: Self.expected, nonce: nil, now: Self.start + 1)
        }
        #expect(waits.seconds.withLock { $0 } == [4], "the forged kid waited for the fetch allowed at 5 s")
        #expect(provider.fetches.load(ordering: .relaxed) == 2)
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        let rotated = try await cache.verify(try Self.token(keyID: "rsa-1"), expecting: Self.expected, nonce: nil, now: Self.start + 6)
        #expect(rotated.subject == "001234.abcdef")
        #expect(waits.seconds.withLock { $0 } == [4, 4])
        #expect(provider.fetches.load(ordering: .relaxed) == 3)

        var patient = KeySetCache.Timing()
        patient.refetchInterval = 30
        let slow = KeySetCache(timing: patient, sleep: waits.sleep) { try provider.fetch() }
        _ = try await slow.verify(try Self.token(keyID: "rsa-1"), expecting: Self.expected, nonce: nil, now: Self.start)
        await #expect(throws: IDToken.Failure.unknownKey("forged")) {
            try await slow.verify(try Self.token(keyID: "forged"), expecting: Self.expected, nonce: nil, now: Self.start + 1)
        }
        #expect(waits.seconds.withLock { $0 } == [4, 4], "29 s is longer than the longest wait")
    }

    /// Forged `kid`s at once, all waiting for the same allowed fetch: one fetch serves them all.
    @Test func waitersShareTheNextFetch() async throws {
        let provider = Provider()
        provider.served.withLock { $0 = try? Self.keySet("rsa-1") }
        let waits = Waits()
        let cache = KeySetCache(sleep: waits.sleep) { try provider.fetch() }
        _ = try await cache.verify(try Self.token(), expecting: Self.expected, nonce: nil, now: Self.start)
        let refused = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<16 {
                group.addTask {
                    do {
                        _ = try await cache.verify(
                            try Self.token(keyID: "forged-\(index)"), expecting: Self.expected, nonce: nil, now: Self.start + 2)
                        return false
                    } catch IDToken.Failure.unknownKey {
                        return true
                    }
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(refused == 16)
        #expect(provider.fetches.load(ordering: .relaxed) == 2, "one fetch at start, one for all the waiters")
    }
}
