@testable import Accounts
import FoundationEssentials
import JSON
import TestSupport
import Testing

/// `SessionCache` alone, without a database or a clock: what it serves, when it serves nothing,
/// which fills it refuses, and what it evicts. `SessionCacheAPITests` runs it on real instances.
@Suite(.testThreads) struct SessionCacheTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    /// The monotonic time of the tests' feed reads.
    static let readAt: UInt64 = 1_000_000_000

    static func hash(_ byte: UInt8) -> [UInt8] { [UInt8](repeating: byte, count: 31) + [7] }

    static func user(_ id: UUID = UUID(), data: JSONObject = JSONObject()) -> User {
        User(
            id: id, email: "u@example.com", firstname: "U", lastname: "V", emailVerified: true, createdAt: now, updatedAt: now,
            data: data, version: 1)
    }

    static func session(of user: User, expiresIn seconds: Double = 3_600) -> Session {
        Session(
            id: UUID(), userID: user.id, createdAt: now, lastSeenAt: now, expiresAt: now.addingTimeInterval(seconds), userAgent: nil,
            authenticatedAt: now)
    }

    /// A cache whose feed has just read (fresh for 80 ms from `readAt`).
    static func freshCache(capacity: Int = 1 << 20) -> SessionCache {
        let cache = SessionCache(capacityBytes: capacity, staleness: .milliseconds(80), refreshAfterSeconds: 60)
        cache.markFresh(sentAt: readAt)
        return cache
    }

    static func fill(_ cache: SessionCache, _ byte: UInt8, _ user: User, ticket: UInt64? = nil, touchDue: Date = now.addingTimeInterval(60)) {
        cache.fill(ticket: ticket ?? cache.ticket(), tokenHash: hash(byte), session: session(of: user), user: user, touchDue: touchDue)
    }

    static func lookup(_ cache: SessionCache, _ byte: UInt8, at monotonic: UInt64 = readAt + 1, now: Date = now) -> SessionCache.Hit? {
        cache.lookup(hash(byte), now: now, monotonicNow: monotonic)
    }

    @Test func servesWhatWasFilledOnlyWhileFresh() {
        let cache = Self.freshCache()
        let user = Self.user()
        Self.fill(cache, 1, user)
        #expect(Self.lookup(cache, 1)?.user == user)
        #expect(Self.lookup(cache, 2) == nil, "another token")
        // 80 ms after the feed's last read was sent: nothing, although the entry is there.
        #expect(Self.lookup(cache, 1, at: Self.readAt + 79_999_999) != nil)
        #expect(Self.lookup(cache, 1, at: Self.readAt + 80_000_000) == nil)
        #expect(cache.usage.entries == 1)
        // A later read makes it fresh again; a failed one stops it at once.
        cache.markFresh(sentAt: Self.readAt + 100_000_000)
        #expect(Self.lookup(cache, 1, at: Self.readAt + 150_000_000) != nil)
        cache.markStale()
        #expect(Self.lookup(cache, 1, at: Self.readAt + 150_000_000) == nil)
        #expect(cache.statistics.hits.load(ordering: .relaxed) == 3)
        #expect(cache.statistics.misses.load(ordering: .relaxed) == 3)
    }

    /// A writer that stops waiting for the feed (its request's deadline) before the staleness
    /// bound has passed since its change: from then on, no read sent before the change makes the
    /// cache serve (one in flight, applied after), only a read sent after it.
    @Test func aCatchUpCutShortLetsNoEarlierReadVouch() {
        let cache = Self.freshCache()
        let user = Self.user()
        Self.fill(cache, 1, user)
        let changedAt = Self.readAt + 10_000_000
        cache.markStale(before: changedAt)
        #expect(Self.lookup(cache, 1, at: changedAt + 1) == nil)
        // A read sent before the change, applied after the writer stopped waiting.
        cache.markFresh(sentAt: changedAt - 1)
        #expect(Self.lookup(cache, 1, at: changedAt + 2) == nil)
        // A read sent at the change or after it vouches again; a flush keeps the rule.
        cache.flush()
        cache.markFresh(sentAt: changedAt - 1)
        #expect(!cache.isFresh(at: changedAt + 3))
        cache.markFresh(sentAt: changedAt)
        #expect(cache.isFresh(at: changedAt + 3))
    }

    @Test func anEndedSessionIsNotServed() {
        let cache = Self.freshCache()
        let user = Self.user()
        cache.fill(ticket: cache.ticket(), tokenHash: Self.hash(1), session: Self.session(of: user, expiresIn: 10), user: user, touchDue: Self.now)
        #expect(Self.lookup(cache, 1, now: Self.now.addingTimeInterval(9)) != nil)
        #expect(Self.lookup(cache, 1, now: Self.now.addingTimeInterval(10)) == nil)
        #expect(cache.usage.entries == 0, "an ended session is dropped")
    }

    @Test func invalidatingAUserDropsEverySessionOfTheirsAndNoOther() {
        let cache = Self.freshCache()
        let (alice, bob) = (Self.user(), Self.user())
        Self.fill(cache, 1, alice)
        Self.fill(cache, 2, alice)
        Self.fill(cache, 3, bob)
        cache.invalidate(users: [alice.id])
        #expect(Self.lookup(cache, 1) == nil)
        #expect(Self.lookup(cache, 2) == nil)
        #expect(Self.lookup(cache, 3)?.user == bob)
        #expect(cache.statistics.invalidations.load(ordering: .relaxed) == 1)
    }

    @Test func aFillThatReadBeforeItsUsersChangeIsRefused() {
        let cache = Self.freshCache()
        let (alice, bob) = (Self.user(), Self.user())
        let ticket = cache.ticket()
        // Alice changed while the lookups read: what they read may be older than the change.
        cache.invalidate(users: [alice.id])
        Self.fill(cache, 1, alice, ticket: ticket)
        Self.fill(cache, 2, bob, ticket: ticket)
        #expect(Self.lookup(cache, 1) == nil)
        #expect(Self.lookup(cache, 2)?.user == bob, "another user's fill is kept")
        #expect(cache.statistics.refusedFills.load(ordering: .relaxed) == 1)
        // A lookup that started after the change is kept.
        Self.fill(cache, 1, alice)
        #expect(Self.lookup(cache, 1)?.user == alice)
    }

    @Test func aFlushDropsEverythingAndRefusesEveryFillInFlight() {
        let cache = Self.freshCache()
        let (alice, bob) = (Self.user(), Self.user())
        Self.fill(cache, 1, alice)
        let ticket = cache.ticket()
        cache.flush()
        #expect(Self.lookup(cache, 1) == nil)
        Self.fill(cache, 2, bob, ticket: ticket)
        #expect(Self.lookup(cache, 2) == nil)
        Self.fill(cache, 2, bob)
        #expect(Self.lookup(cache, 2)?.user == bob)
    }

    @Test func forgottenInvalidationsRefuseEveryOlderFill() {
        let cache = Self.freshCache()
        let alice = Self.user()
        let ticket = cache.ticket()
        cache.invalidate(users: (0...SessionCache.rememberedInvalidations).map { _ in UUID() })
        // Alice was not among them, but the cache no longer knows who was.
        Self.fill(cache, 1, alice, ticket: ticket)
        #expect(Self.lookup(cache, 1) == nil)
        Self.fill(cache, 1, alice)
        #expect(Self.lookup(cache, 1) != nil)
    }

    @Test func theLeastRecentlyUsedGoFirstWithinTheBytes() {
        let user = Self.user()
        let size = SessionCache.estimatedBytes(Self.session(of: user), user)
        let cache = Self.freshCache(capacity: 3 * size)
        Self.fill(cache, 1, user)
        Self.fill(cache, 2, user)
        Self.fill(cache, 3, user)
        #expect(Self.lookup(cache, 1) != nil, "1 is now the most recently used")
        Self.fill(cache, 4, user)
        #expect(Self.lookup(cache, 2) == nil, "2 was the least recently used")
        #expect(Self.lookup(cache, 1) != nil)
        #expect(Self.lookup(cache, 3) != nil)
        #expect(Self.lookup(cache, 4) != nil)
        #expect(cache.usage == (3, 3 * size))
        #expect(cache.statistics.evictions.load(ordering: .relaxed) == 1)
        // Refilling a token replaces its entry.
        Self.fill(cache, 4, user)
        #expect(cache.usage.entries == 3)
    }

    @Test func anEntryLargerThanTheCacheIsNotKeptAndLargeFieldsCount() {
        let small = Self.user()
        let large = Self.user(data: JSONObject(uniqueKeysWithValues: [("bio", .string(String(repeating: "x", count: 10_000)))]))
        #expect(SessionCache.estimatedBytes(Self.session(of: large), large) > 10_000)
        let cache = Self.freshCache(capacity: 8_000)
        Self.fill(cache, 1, small)
        Self.fill(cache, 2, large)
        #expect(Self.lookup(cache, 2) == nil)
        #expect(Self.lookup(cache, 1) != nil, "nothing evicted for an entry that cannot fit")
    }

    @Test func aUseMakesLastSeenDueOnceItsTimeComes() {
        let cache = Self.freshCache()
        let user = Self.user()
        Self.fill(cache, 1, user, touchDue: Self.now.addingTimeInterval(30))
        #expect(Self.lookup(cache, 1, now: Self.now.addingTimeInterval(29))?.touch == false)
        #expect(Self.lookup(cache, 1, now: Self.now.addingTimeInterval(30))?.touch == true)
        // Noted once, then due again a refresh interval (60 s) later.
        #expect(Self.lookup(cache, 1, now: Self.now.addingTimeInterval(31))?.touch == false)
        #expect(Self.lookup(cache, 1, now: Self.now.addingTimeInterval(90))?.touch == true)
    }

    @Test func anOffCacheKeepsNothing() {
        let cache = SessionCache(capacityBytes: 0, refreshAfterSeconds: 60)
        cache.markFresh(sentAt: Self.readAt)
        Self.fill(cache, 1, Self.user())
        #expect(Self.lookup(cache, 1) == nil)
        #expect(!cache.isEnabled)
    }
}
