import FoundationEssentials
import JSON
import Synchronization
import Threads

/// Sessions and their users as a token's lookup read them, kept in this instance so that an
/// authenticated request needs no database round trip; bounded in bytes, least recently used
/// first out.
///
/// Revocation stays immediate because an entry is served only while the cache is *fresh*: the
/// `InvalidationFeed` that keeps it has applied, less than the staleness bound ago, a read of
/// every change committed before that read was sent (`markFresh(sentAt:)`). A change committed
/// after it is at most the bound old. Whenever the feed cannot say that (its connection is down, a
/// read is late, the server changed), nothing is served and every lookup reads through.
///
/// A fill races the invalidations: a lookup that read the database before a change committed may
/// finish after the change's invalidation was applied. Every fill carries the `ticket` it took
/// before its read, and is refused when its user was invalidated after that ticket (or when the
/// cache no longer remembers: it remembers the last `rememberedInvalidations` users).
public final class SessionCache: Sendable {
    /// What the lookup read: the session, its user, and when its `lastSeenAt` is next due to be
    /// written (the toucher writes it in the background).
    public struct Hit: Sendable {
        public let session: Session
        public let user: User
        /// Whether this use makes the session's `lastSeenAt` due: the caller notes it.
        public let touch: Bool
    }

    /// Counters for `/metrics`.
    public final class Statistics: Sendable {
        public let hits = Atomic<Int>(0)
        public let misses = Atomic<Int>(0)
        public let evictions = Atomic<Int>(0)
        /// Users whose entries were dropped because a change to them committed.
        public let invalidations = Atomic<Int>(0)
        /// Times the whole cache was emptied (the feed reconnected or found a gap).
        public let flushes = Atomic<Int>(0)
        /// Fills refused because their user changed while they read.
        public let refusedFills = Atomic<Int>(0)
        /// Times the feed opened its connection, and reads it applied.
        public let feedConnects = Atomic<Int>(0)
        public let feedReads = Atomic<Int>(0)
        init() {}
    }

    /// A token's SHA-256, as a key that hashes fast.
    struct Key: Hashable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        init(_ hash: [UInt8]) {
            precondition(hash.count == 32)
            words = hash.withUnsafeBytes {
                (
                    $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                    $0.loadUnaligned(fromByteOffset: 16, as: UInt64.self), $0.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
                )
            }
        }

        static func == (lhs: Key, rhs: Key) -> Bool { lhs.words == rhs.words }
        func hash(into hasher: inout Hasher) { hasher.combine(words.0) }
    }

    private struct Entry {
        let key: Key
        let session: Session
        let user: User
        let bytes: Int
        var touchDue: Date
        var newer: Int32 = -1
        var older: Int32 = -1
    }

    private struct State {
        var entries: [Entry?] = []
        var free: [Int32] = []
        var index: [Key: Int32] = [:]
        var byUser: [UUID: [Int32]] = [:]
        /// The most and least recently used entries.
        var newest: Int32 = -1
        var oldest: Int32 = -1
        var bytes = 0
        /// Counts invalidations; fills take it as their ticket.
        var generation: UInt64 = 0
        /// The generation of each user's last invalidation, for the fills in flight.
        var invalidatedAt: [UUID: UInt64] = [:]
        /// Fills with a ticket below this are refused: what happened before it is forgotten.
        var forgottenBefore: UInt64 = 0
        /// Entries are served until this monotonic time (nanoseconds); 0 serves nothing.
        var freshUntil: UInt64 = 0
        /// A read sent before this monotonic time vouches for nothing (`markStale(before:)`).
        var staleBefore: UInt64 = 0
    }

    /// The most bytes the entries may take (an estimate of what they hold); 0 turns the cache off.
    public let capacityBytes: Int
    /// How old a change may be and still not be applied while entries are served.
    public let staleness: Duration
    /// How long `lastSeenAt` may get before a use writes it again (`SessionLifetime.refreshAfterSeconds`).
    let refreshAfterSeconds: Double
    public let statistics = Statistics()
    static let rememberedInvalidations = 16_384
    private let state = Mutex(State())

    public init(capacityBytes: Int, staleness: Duration = .milliseconds(80), refreshAfterSeconds: Double) {
        self.capacityBytes = max(0, capacityBytes)
        self.staleness = staleness
        self.refreshAfterSeconds = refreshAfterSeconds
    }

    public var isEnabled: Bool { capacityBytes > 0 }

    // MARK: - Reads

    /// The live entry of `tokenHash`, or nil (not cached, ended, or the cache is not fresh).
    func lookup(_ tokenHash: [UInt8], now: Date, monotonicNow: UInt64) -> Hit? {
        let key = Key(tokenHash)
        let hit = state.withLock { state -> Hit? in
            guard monotonicNow < state.freshUntil, let slot = state.index[key], var entry = state.entries[Int(slot)] else { return nil }
            guard entry.session.expiresAt > now else {
                Self.remove(slot, from: &state)
                return nil
            }
            let touch = now >= entry.touchDue
            if touch {
                entry.touchDue = now.addingTimeInterval(refreshAfterSeconds)
                state.entries[Int(slot)] = entry
            }
            Self.unlink(slot, in: &state)
            Self.linkNewest(slot, in: &state)
            return Hit(session: entry.session, user: entry.user, touch: touch)
        }
        if hit == nil {
            statistics.misses.add(1, ordering: .relaxed)
        } else {
            statistics.hits.add(1, ordering: .relaxed)
        }
        return hit
    }

    // MARK: - Fills

    /// Taken before a lookup reads the database, and given back with what it read.
    func ticket() -> UInt64 { state.withLock { $0.generation } }

    /// Keeps what a lookup read, unless its user changed since `ticket` was taken; `touchDue` is
    /// when its `lastSeenAt` is next due. Evicts the least recently used entries to make room.
    func fill(ticket: UInt64, tokenHash: [UInt8], session: Session, user: User, touchDue: Date) {
        guard isEnabled else { return }
        let key = Key(tokenHash)
        let bytes = Self.estimatedBytes(session, user)
        guard bytes <= capacityBytes else { return }
        let (refused, evicted) = state.withLock { state -> (Bool, Int) in
            guard ticket >= state.forgottenBefore, (state.invalidatedAt[user.id] ?? 0) <= ticket else { return (true, 0) }
            if let slot = state.index[key] { Self.remove(slot, from: &state) }
            var evicted = 0
            while state.bytes + bytes > capacityBytes, state.oldest >= 0 {
                Self.remove(state.oldest, from: &state)
                evicted += 1
            }
            let slot: Int32
            let entry = Entry(key: key, session: session, user: user, bytes: bytes, touchDue: touchDue)
            if let reused = state.free.popLast() {
                slot = reused
                state.entries[Int(slot)] = entry
            } else {
                slot = Int32(state.entries.count)
                state.entries.append(entry)
            }
            state.index[key] = slot
            state.byUser[user.id, default: []].append(slot)
            state.bytes += bytes
            Self.linkNewest(slot, in: &state)
            return (false, evicted)
        }
        if refused { statistics.refusedFills.add(1, ordering: .relaxed) }
        if evicted > 0 { statistics.evictions.add(evicted, ordering: .relaxed) }
    }

    // MARK: - Invalidation

    /// Drops the entries of `users`, and refuses the fills in flight that read them before now.
    public func invalidate(users: some Collection<UUID>) {
        guard isEnabled, !users.isEmpty else { return }
        state.withLock { state in
            state.generation += 1
            for user in users {
                state.invalidatedAt[user] = state.generation
                for slot in state.byUser[user] ?? [] { Self.remove(slot, from: &state) }
            }
            if state.invalidatedAt.count > Self.rememberedInvalidations {
                state.invalidatedAt.removeAll()
                state.forgottenBefore = state.generation
            }
        }
        statistics.invalidations.add(users.count, ordering: .relaxed)
    }

    /// Drops every entry and refuses every fill in flight.
    public func flush() {
        state.withLock { state in
            state.generation += 1
            state = State(
                generation: state.generation, forgottenBefore: state.generation, freshUntil: state.freshUntil,
                staleBefore: state.staleBefore)
        }
        statistics.flushes.add(1, ordering: .relaxed)
    }

    /// Called by the feed once it has applied every change committed before `sentAt` (a monotonic
    /// time): entries may be served until `sentAt` + `staleness`.
    func markFresh(sentAt: UInt64) {
        let until = sentAt + staleness.nanoseconds
        state.withLock { state in
            guard sentAt >= state.staleBefore else { return }
            state.freshUntil = max(state.freshUntil, until)
        }
    }

    /// Serves nothing until the feed has applied a read sent at or after `time` (a monotonic
    /// time): for a writer that stops waiting for that read (`InvalidationFeed.catchUp`) before
    /// the staleness bound has passed since its change, so that no read sent before the change
    /// can vouch for entries it may have made stale.
    func markStale(before time: UInt64) {
        state.withLock { state in
            state.freshUntil = 0
            state.staleBefore = max(state.staleBefore, time)
        }
    }

    /// Serves nothing until the feed says otherwise.
    func markStale() {
        state.withLock { $0.freshUntil = 0 }
    }

    /// Whether entries are served at `monotonicNow`.
    public func isFresh(at monotonicNow: UInt64 = monotonicNanoseconds()) -> Bool {
        state.withLock { monotonicNow < $0.freshUntil }
    }

    /// How many entries there are and the bytes they are estimated to take.
    public var usage: (entries: Int, bytes: Int) {
        state.withLock { ($0.index.count, $0.bytes) }
    }

    // MARK: - The list

    private static func remove(_ slot: Int32, from state: inout State) {
        guard let entry = state.entries[Int(slot)] else { return }
        unlink(slot, in: &state)
        state.entries[Int(slot)] = nil
        state.free.append(slot)
        state.index[entry.key] = nil
        state.bytes -= entry.bytes
        if var slots = state.byUser[entry.user.id] {
            slots.removeAll { $0 == slot }
            state.byUser[entry.user.id] = slots.isEmpty ? nil : slots
        }
    }

    private static func unlink(_ slot: Int32, in state: inout State) {
        guard let entry = state.entries[Int(slot)] else { return }
        if entry.newer >= 0 { state.entries[Int(entry.newer)]!.older = entry.older } else { state.newest = entry.older }
        if entry.older >= 0 { state.entries[Int(entry.older)]!.newer = entry.newer } else { state.oldest = entry.newer }
        state.entries[Int(slot)]!.newer = -1
        state.entries[Int(slot)]!.older = -1
    }

    private static func linkNewest(_ slot: Int32, in state: inout State) {
        state.entries[Int(slot)]!.older = state.newest
        state.entries[Int(slot)]!.newer = -1
        if state.newest >= 0 { state.entries[Int(state.newest)]!.newer = slot }
        state.newest = slot
        if state.oldest < 0 { state.oldest = slot }
    }

    // MARK: - Size

    /// What an entry takes, estimated: its fixed part (the entry, its key in two tables, the
    /// strings' headers) and its strings' and custom fields' bytes.
    static func estimatedBytes(_ session: Session, _ user: User) -> Int {
        let strings = [user.email ?? "", user.firstname, user.lastname, user.pendingEmail ?? "", session.userAgent ?? ""]
        return 512 + strings.reduce(0) { $0 + $1.utf8.count } + estimatedBytes(user.data)
    }

    private static func estimatedBytes(_ object: JSONObject) -> Int {
        object.reduce(0) { $0 + 48 + $1.key.utf8.count + estimatedBytes($1.value) }
    }

    private static func estimatedBytes(_ value: JSONValue) -> Int {
        switch value {
        case .null, .bool: 0
        case .number(let number): number.text.utf8.count
        case .string(let string): string.utf8.count
        case .array(let values): values.reduce(0) { $0 + 32 + estimatedBytes($1) }
        case .object(let object): estimatedBytes(object)
        }
    }
}
