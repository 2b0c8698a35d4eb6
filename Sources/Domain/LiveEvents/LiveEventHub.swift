import HTTP
import Postgres
import StructuredLogging
import Threads

/// One event of a user's stream, rendered: its number (the SSE `id`), its name and its JSON.
public struct LiveEvent: Sendable, Equatable {
    public let id: Int64
    public let name: String
    public let data: [UInt8]

    public init(id: Int64, name: String, data: [UInt8]) {
        self.id = id
        self.name = name
        self.data = data
    }
}

/// What a user's streams missed after a number, as the database has it now.
public struct CatchUp: Sendable {
    /// The events after the number asked for, rendered, in order (a renderer may leave some out:
    /// an image added and deleted since, whose deletion follows).
    public var events: [LiveEvent]
    /// The number the catch-up reached: every event up to it was looked at.
    public var reached: Int64
    /// The lowest number still kept after the one asked for; nil when none is. A stream behind it
    /// missed events that are gone (kept a few minutes) and must reload (`resync`).
    public var firstKept: Int64?
    /// Whether events past `reached` remain (a long backlog comes in several rounds).
    public var more: Bool
    /// Which of the sessions asked about still exist.
    public var liveSessions: Set<String>

    public init(events: [LiveEvent], reached: Int64, firstKept: Int64?, more: Bool, liveSessions: Set<String>) {
        self.events = events
        self.reached = reached
        self.firstKept = firstKept
        self.more = more
        self.liveSessions = liveSessions
    }
}

/// Where the hub reads what streams missed and how it listens.
public protocol LiveEventSource: Sendable {
    /// The events of `userID` after `after`, and which of `sessions` still exist.
    func catchUp(userID: String, after: Int64, sessions: [String]) throws -> CatchUp
    /// A connection of its own, for `LISTEN` (not through a pooler in transaction mode).
    func listenerConnection() throws -> PostgresConnection
    /// Tells the database that this instance has streams of these users (or that it still has):
    /// their changes are notified from then on.
    func watch(userIDs: [String]) throws
    /// This instance has no stream of these users any more.
    func unwatch(userIDs: [String]) throws
    /// The latest event numbers of `userIDs`, and which of `sessions` still exist.
    func sweep(userIDs: [String], sessions: [String]) throws -> (latest: [String: Int64], liveSessions: Set<String>)
}

/// Every open event stream of this instance (`GET /users/me/events`), and what feeds them.
///
/// The database's triggers number each user's events, keep them a few minutes and `NOTIFY` the
/// user's id when they commit (`migrations/0013_user_events.sql`); a session's end notifies its
/// id. One connection per instance listens. A notification for a user with streams here marks the
/// user for a catch-up: one thread reads what the user's streams have not had yet (one read for
/// all of them), checks that their sessions still exist, and hands each stream what it lacks.
/// Streams whose session is gone get `session_ended` and end.
///
/// The database keeps and notifies events only for users that some instance has marked as having
/// streams (a `NOTIFY` serialises commits): before a user's first stream here is answered, the hub
/// marks the user; `watchLinger` after the user's last stream here ended, it removes the mark (a
/// client that resumes meanwhile misses nothing); every minute it refreshes its marks.
///
/// Nothing depends on a notification arriving: a stream only ever gets what a catch-up read from
/// the database, so a lost notification delays events and loses none. When the listening
/// connection drops, every user with streams here is caught up once it is back, and sessions that
/// ended meanwhile are found by that catch-up. And every `sweepInterval` one read compares every
/// stream's position with its user's latest number and checks their sessions, which bounds the
/// delay of whatever no notification carried (a change that began before the user's mark
/// committed, say).
public final class LiveEventHub: @unchecked Sendable {
    public static let userChannel: StaticString = "exosphere_user_events"
    public static let sessionChannel: StaticString = "exosphere_session_ends"
    static let sessionChannelName = "exosphere_session_ends"

    public struct Configuration: Sendable {
        /// A comment line after this long without bytes, so that proxies keep the stream open.
        public var heartbeat: Duration = .seconds(25)
        /// The SSE `retry` the stream opens with: how long a browser waits before reconnecting.
        public var retry: Duration = .seconds(2)
        /// The wait before trying a lost listening connection again, doubled after each failure
        /// up to `maxReconnectDelay`.
        public var firstReconnectDelay: Duration = .milliseconds(50)
        public var maxReconnectDelay: Duration = .seconds(2)
        /// How often every stream is checked against the database, whatever the notifications said.
        public var sweepInterval: Duration = .seconds(5)
        /// How often this instance's marks of users with streams are refreshed.
        public var watchRefreshInterval: Duration = .seconds(60)
        /// How long a user's mark outlives the user's last stream here: changes meanwhile are kept
        /// for a client that resumes (the contract promises 5 minutes).
        public var watchLinger: Duration = .seconds(600)
        /// The most bytes a stream holds for its client: past them (a client that does not read),
        /// the stream says `resync` and ends, and what it held is let go.
        public var maxPendingBytes = 256 * 1024
        /// What all the streams of this instance may hold unread together: with many streams
        /// open, each may hold its share of it (never less than `minimumPendingBytes`, never more
        /// than `maxPendingBytes`), so that 200 unread streams cost what 64 do.
        public var maxTotalPendingBytes = 16 * 1024 * 1024
        /// The least a stream may hold, whatever the share: one whole user's `profile` event.
        public var minimumPendingBytes = 80 * 1024

        public init() {}
    }

    /// What a stream holds for its client: frames as they were made, each one's storage shared by
    /// every stream it went to (the streams of a user get one copy of an event, not one each).
    struct Pending {
        private var chunks: [[UInt8]] = []
        /// The bytes held, counted for each stream (what its cap weighs).
        private(set) var count = 0

        init(_ bytes: [UInt8] = []) {
            if !bytes.isEmpty { append(bytes) }
        }

        var isEmpty: Bool { count == 0 }

        mutating func append(_ bytes: [UInt8]) {
            chunks.append(bytes)
            count += bytes.count
        }

        /// Everything held, in one array, and nothing held after.
        mutating func take() -> [UInt8] {
            defer { self = Pending() }
            return chunks.count == 1 ? chunks[0] : Array(chunks.joined())
        }
    }

    /// A stream's state, kept by the hub; its `LiveEventStream` owns it.
    /// Only touched under the hub's lock.
    final class Subscriber: @unchecked Sendable {
        let userID: String
        let sessionID: String
        var lastID: Int64
        var pending: Pending
        var waiter: (@Sendable (Result<[UInt8], any Error>) -> Void)?
        /// The stream ends once `pending` is taken.
        var ending = false
        var lastSentAt: UInt64

        init(userID: String, sessionID: String, lastID: Int64, greeting: [UInt8], now: UInt64) {
            self.userID = userID
            self.sessionID = sessionID
            self.lastID = lastID
            self.pending = Pending(greeting)
            self.lastSentAt = now
        }
    }

    private let source: any LiveEventSource
    private let configuration: Configuration
    private let logger: Logger
    private let lock = ConditionLock()
    private var byUser: [String: [ObjectIdentifier: Subscriber]] = [:]
    /// The streams open here (the subscribers of `byUser`).
    private var open = 0
    private var bySession: [String: [ObjectIdentifier: Subscriber]] = [:]
    /// Users whose streams need a catch-up, in the order they were marked.
    private var dirty: [String] = []
    private var dirtySet: Set<String> = []
    private var listening = false
    private var stopping = false
    /// Users this instance has marked in the database as having streams here.
    private var watched: Set<String> = []
    /// Marked users without a stream here, since when: their marks go after `watchLinger`.
    private var idleSince: [String: UInt64] = [:]
    /// Marks to remove (unless a stream came back meanwhile).
    private var unwatching: Set<String> = []
    /// Serialise marking and unmarking a user (by a hash of the user's id): 16 stripes, so that
    /// streams opening for different users seldom wait for each other's database round trip.
    private let marking = (0..<16).map { _ in ConditionLock() }
    /// When the marks were last refreshed (the sweeper's thread only, under the lock).
    private var lastRefresh = monotonicNanoseconds()
    private var threads: [OSThread] = []
    private let heartbeat = PeriodicThread(name: "events-beat", intervalNanoseconds: 1_000_000_000)
    private let sweeper: PeriodicThread
    private var counters = Statistics()

    public struct Statistics: Sendable, Equatable {
        public var open = 0
        public var opened: UInt64 = 0
        public var delivered: UInt64 = 0
        public var catchUps: UInt64 = 0
        public var catchUpFailures: UInt64 = 0
        public var listenerConnects: UInt64 = 0
        public var sweeps: UInt64 = 0
        public var sweepFailures: UInt64 = 0
        public var listening = false
        /// Users this instance has marked as having streams here.
        public var watchedUsers = 0
        /// Streams ended because their client did not read what they held (`maxPendingBytes`).
        public var overflowed: UInt64 = 0
        /// The bytes the open streams hold for their clients, all together.
        public var pendingBytes = 0
    }

    public init(source: any LiveEventSource, configuration: Configuration = Configuration(), logger: Logger) {
        self.source = source
        self.configuration = configuration
        self.logger = logger
        sweeper = PeriodicThread(name: "events-sweep", intervalNanoseconds: configuration.sweepInterval.nanoseconds)
        let started = [
            OSThread(name: "events-listen", stackSize: 256 * 1024) { [self] in listen() },
            OSThread(name: "events-deliver", stackSize: 512 * 1024) { [self] in deliver() },
        ]
        lock.withLock { threads = started }
        heartbeat.start { [self] in beat() }
        sweeper.start { [self] in
            sweep()
            let now = monotonicNanoseconds()
            let due = lock.withLock {
                guard now - lastRefresh >= configuration.watchRefreshInterval.nanoseconds else { return false }
                lastRefresh = now
                return true
            }
            if due { refreshWatches() }
        }
    }

    public var statistics: Statistics {
        lock.withLock {
            var figures = counters
            figures.open = byUser.values.reduce(0) { $0 + $1.count }
            figures.pendingBytes = byUser.values.reduce(0) { total, subscribers in subscribers.values.reduce(total) { $0 + $1.pending.count } }
            figures.listening = listening
            figures.watchedUsers = watched.count
            return figures
        }
    }

    /// Whether the listening connection is up (streams get events within moments).
    public var isListening: Bool { lock.withLock { listening } }

    /// A stream of `userID`'s events after `after` for as long as `sessionID` lives. Events between
    /// `after` and now are read at once (the user is caught up), so `after` may be a `Last-Event-ID`
    /// or the user's latest number read before this call.
    ///
    /// Marks the user in the database first, when this instance has not: so by the time the client
    /// has the response's head, every change that begins is kept and notified. (A change that began
    /// before and commits after `after` was read is not kept: the stream is told to `resync`.)
    /// Throws what marking throws (the database is unavailable).
    public func subscribe(userID: String, sessionID: String, after: Int64) throws -> LiveEventStream {
        try mark(userID)
        let greeting = Array("retry: \(configuration.retry.components.seconds * 1000)\n\n".utf8)
        let subscriber = Subscriber(userID: userID, sessionID: sessionID, lastID: after, greeting: greeting, now: monotonicNanoseconds())
        lock.withLock {
            let key = ObjectIdentifier(subscriber)
            byUser[userID, default: [:]][key] = subscriber
            bySession[sessionID, default: [:]][key] = subscriber
            open += 1
            counters.opened += 1
            if stopping { subscriber.ending = true }
            markDirty(userID)
        }
        return LiveEventStream(hub: self, subscriber: subscriber)
    }

    /// Marks the user in the database unless this instance has, and keeps the mark (it is no
    /// longer idle). Under the user's stripe of `marking`, as a removal of the mark is, so that a
    /// removal and a new stream never cross.
    private func mark(_ userID: String) throws {
        try marking[stripe(userID)].withLock {
            if !lock.withLock({ watched.contains(userID) }) { try source.watch(userIDs: [userID]) }
            lock.withLock {
                watched.insert(userID)
                idleSince[userID] = nil
            }
        }
    }

    /// Removes the user's mark if the user still has no stream here and has been idle since
    /// `unwatching` was filled; on failure the mark stays, and a later sweep tries again.
    private func unmark(_ userID: String) {
        marking[stripe(userID)].withLock {
            guard lock.withLock({ byUser[userID] == nil && idleSince[userID] != nil && watched.contains(userID) }) else { return }
            do {
                try source.unwatch(userIDs: [userID])
            } catch {
                logger.warning("live events: could not remove a mark", ["error": String(describing: error)])
                return
            }
            lock.withLock {
                watched.remove(userID)
                idleSince[userID] = nil
            }
        }
    }

    private func stripe(_ userID: String) -> Int {
        var hasher = Hasher()
        hasher.combine(userID)
        return Int(UInt(bitPattern: hasher.finalize()) % UInt(marking.count))
    }

    /// Ends every stream and stops the threads; this instance's marks are left to go stale.
    public func shutdown() {
        let ready: [Delivery] = lock.withLock {
            stopping = true
            lock.broadcast()
            return byUser.values.flatMap(\.values).compactMap { subscriber in
                subscriber.ending = true
                return take(subscriber)
            }
        }
        for delivery in ready { delivery.send() }
        heartbeat.stop()
        sweeper.stop()
        let joining = lock.withLock { threads }
        joining.forEach { $0.join() }
        // The marks stay: the streams' clients reconnect (elsewhere, or here after a restart) with
        // Last-Event-ID, and what happens meanwhile is kept for them. Unrefreshed, they go stale
        // and housekeeping deletes them (`live_streams`, 10 minutes).
    }

    // MARK: - Streams

    func next(_ subscriber: Subscriber, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        let ready: [UInt8]? = lock.withLock {
            if !subscriber.pending.isEmpty || subscriber.ending {
                subscriber.lastSentAt = monotonicNanoseconds()
                return subscriber.pending.take()
            }
            subscriber.waiter = completion
            return nil
        }
        if let ready { completion(.success(ready)) }
    }

    func remove(_ subscriber: Subscriber) {
        lock.withLock {
            let key = ObjectIdentifier(subscriber)
            if byUser[subscriber.userID]?.removeValue(forKey: key) != nil { open -= 1 }
            if byUser[subscriber.userID]?.isEmpty == true {
                byUser[subscriber.userID] = nil
                // The mark stays a while: a client that comes back with Last-Event-ID finds what happened meanwhile.
                if watched.contains(subscriber.userID) { idleSince[subscriber.userID] = monotonicNanoseconds() }
            }
            bySession[subscriber.sessionID]?[key] = nil
            if bySession[subscriber.sessionID]?.isEmpty == true { bySession[subscriber.sessionID] = nil }
        }
    }

    /// Bytes for a stream that waits for them, handed over once the lock is released.
    private struct Delivery {
        let waiter: @Sendable (Result<[UInt8], any Error>) -> Void
        let bytes: [UInt8]

        func send() { waiter(.success(bytes)) }
    }

    /// Under the lock: what a waiting stream gets now that its subscriber has something for it
    /// (or has ended); nil when it is not waiting or there is nothing.
    private func take(_ subscriber: Subscriber) -> Delivery? {
        guard let waiter = subscriber.waiter, !subscriber.pending.isEmpty || subscriber.ending else { return nil }
        subscriber.waiter = nil
        subscriber.lastSentAt = monotonicNanoseconds()
        return Delivery(waiter: waiter, bytes: subscriber.pending.take())
    }

    /// Under the lock: the streams of a user, or of a session.
    private func subscribers(ofUser userID: String) -> [Subscriber] { byUser[userID].map { Array($0.values) } ?? [] }
    private func subscribers(ofSession sessionID: String) -> [Subscriber] { bySession[sessionID].map { Array($0.values) } ?? [] }

    /// Under the lock.
    private func markDirty(_ userID: String) {
        guard dirtySet.insert(userID).inserted else { return }
        dirty.append(userID)
        lock.broadcast()
    }

    private static func frame(_ event: LiveEvent) -> [UInt8] {
        var bytes = Array("id: \(event.id)\nevent: \(event.name)\ndata: ".utf8)
        bytes.reserveCapacity(bytes.count + event.data.count + 2)
        bytes += event.data
        bytes += [0x0A, 0x0A]
        return bytes
    }

    private static let sessionEnded = Array("event: session_ended\ndata: {}\n\n".utf8)
    private static let comment = Array(":\n\n".utf8)

    // MARK: - Threads

    /// Keeps one connection listening; after each reconnection every user with streams here is
    /// caught up, since notifications sent while it was down are lost.
    private func listen() {
        var delay = configuration.firstReconnectDelay
        var failing = false
        while !lock.withLock({ stopping }) {
            do {
                let connection = try source.listenerConnection()
                defer { connection.close() }
                try connection.listen(to: LiveEventHub.userChannel)
                try connection.listen(to: LiveEventHub.sessionChannel)
                lock.withLock {
                    listening = true
                    counters.listenerConnects += 1
                    for userID in byUser.keys { markDirty(userID) }
                }
                if failing { logger.notice("live events: listening again") }
                failing = false
                delay = configuration.firstReconnectDelay
                while !lock.withLock({ stopping }) {
                    let notifications = try connection.notifications(waitingAtMost: .milliseconds(250))
                    if !notifications.isEmpty { received(notifications) }
                }
            } catch {
                lock.withLock { listening = false }
                if !failing {
                    logger.warning("live events: the listening connection failed; streams wait for it", ["error": String(describing: error)])
                }
                failing = true
                let until = monotonicNanoseconds() + delay.nanoseconds
                lock.withLock {
                    while !stopping, lock.wait(untilMonotonicNanoseconds: until) {}
                }
                delay = min(delay * 2, max(configuration.maxReconnectDelay, configuration.firstReconnectDelay))
            }
        }
        lock.withLock { listening = false }
    }

    private func received(_ notifications: [PostgresNotification]) {
        let ready: [Delivery] = lock.withLock {
            var ready: [Delivery] = []
            for notification in notifications {
                if notification.channel == LiveEventHub.sessionChannelName {
                    for subscriber in subscribers(ofSession: notification.payload) {
                        end(subscriber)
                        if let delivery = take(subscriber) { ready.append(delivery) }
                    }
                } else if byUser[notification.payload] != nil {
                    markDirty(notification.payload)
                }
            }
            return ready
        }
        for delivery in ready { delivery.send() }
    }

    /// Under the lock: the stream says `session_ended` and ends.
    private func end(_ subscriber: Subscriber) {
        guard !subscriber.ending else { return }
        subscriber.pending.append(LiveEventHub.sessionEnded)
        subscriber.ending = true
    }

    /// Under the lock: `bytes` for the stream's client, unless that makes it hold more than its
    /// share (`maxPendingBytes`, less with many streams open: `pendingLimit`): then what it holds
    /// goes, and it says `resync` (the client reloads what it shows and reconnects) and ends. A
    /// client that reads keeps its stream; one that does not costs at most that much.
    private func append(_ bytes: [UInt8], to subscriber: Subscriber) {
        guard !subscriber.ending else { return }
        guard subscriber.pending.count + bytes.count > pendingLimit else {
            subscriber.pending.append(bytes)
            return
        }
        subscriber.pending = Pending(LiveEventHub.frame(LiveEvent(id: subscriber.lastID, name: "resync", data: Array("{}".utf8))))
        subscriber.ending = true
        counters.overflowed += 1
    }

    /// Under the lock: what one stream may hold now, its share of `maxTotalPendingBytes`.
    private var pendingLimit: Int {
        min(configuration.maxPendingBytes, max(configuration.minimumPendingBytes, configuration.maxTotalPendingBytes / max(1, open)))
    }

    /// Catches up marked users, one at a time, in the order they were marked, and removes the
    /// marks of users whose last stream here ended long enough ago.
    private func deliver() {
        while true {
            // Nil once the hub stops.
            let next: (work: (userID: String, after: Int64, sessions: [String])?, gone: [String])? = lock.withLock {
                while !stopping, dirty.isEmpty, unwatching.isEmpty { lock.wait() }
                guard !stopping else { return nil }
                let gone = Array(unwatching)
                unwatching = []
                guard !dirty.isEmpty else { return (nil, gone) }
                let userID = dirty.removeFirst()
                dirtySet.remove(userID)
                let live = subscribers(ofUser: userID).filter { !$0.ending }
                return ((userID, live.map(\.lastID).min() ?? 0, Array(Set(live.map(\.sessionID)))), gone)
            }
            guard let (work, gone) = next else { return }
            gone.forEach(unmark)
            guard let work, !work.sessions.isEmpty else { continue }
            let caughtUp: CatchUp
            do {
                caughtUp = try source.catchUp(userID: work.userID, after: work.after, sessions: work.sessions)
            } catch {
                logger.warning("live events: a catch-up failed; it is tried again", ["error": String(describing: error)])
                lock.withLock {
                    counters.catchUpFailures += 1
                    // Tried again after the others (and after a pause, unless there are others).
                    if dirty.isEmpty { _ = lock.wait(untilMonotonicNanoseconds: monotonicNanoseconds() + 200_000_000) }
                    markDirty(work.userID)
                }
                continue
            }
            let ready: [Delivery] = lock.withLock {
                counters.catchUps += 1
                if caughtUp.more { markDirty(work.userID) }
                var ready: [Delivery] = []
                // Each event framed once, its bytes shared by every stream of the user.
                let frames = caughtUp.events.map { (id: $0.id, bytes: LiveEventHub.frame($0)) }
                for subscriber in subscribers(ofUser: work.userID) where !subscriber.ending {
                    if work.sessions.contains(subscriber.sessionID), !caughtUp.liveSessions.contains(subscriber.sessionID) {
                        end(subscriber)
                    } else if caughtUp.reached > subscriber.lastID {
                        if let first = caughtUp.firstKept, first <= subscriber.lastID + 1 {
                            for frame in frames where frame.id > subscriber.lastID {
                                append(frame.bytes, to: subscriber)
                                counters.delivered += 1
                            }
                        } else {
                            // What it missed is no longer kept: the client reloads what it shows.
                            append(LiveEventHub.frame(LiveEvent(id: caughtUp.reached, name: "resync", data: Array("{}".utf8))), to: subscriber)
                        }
                        if !subscriber.ending { subscriber.lastID = caughtUp.reached }
                    }
                    if let delivery = take(subscriber) { ready.append(delivery) }
                }
                return ready
            }
            for delivery in ready { delivery.send() }
        }
    }

    /// Compares every stream's position with its user's latest number, and checks their sessions:
    /// what no notification carried is caught up now.
    private func sweep() {
        let (positions, sessions): ([String: Int64], [String]) = lock.withLock {
            // Marks whose users have had no stream here for `watchLinger` go (on the delivering thread).
            let now = monotonicNanoseconds()
            let linger = configuration.watchLinger.nanoseconds
            for (userID, since) in idleSince where byUser[userID] == nil && now - since >= linger { unwatching.insert(userID) }
            if !unwatching.isEmpty { lock.broadcast() }
            var positions: [String: Int64] = [:]
            var sessions: Set<String> = []
            for (userID, subscribers) in byUser {
                for subscriber in subscribers.values where !subscriber.ending {
                    positions[userID] = min(positions[userID] ?? .max, subscriber.lastID)
                    sessions.insert(subscriber.sessionID)
                }
            }
            return (positions, Array(sessions))
        }
        guard !positions.isEmpty else { return }
        let found: (latest: [String: Int64], liveSessions: Set<String>)
        do {
            found = try source.sweep(userIDs: Array(positions.keys), sessions: sessions)
        } catch {
            lock.withLock { counters.sweepFailures += 1 }
            logger.warning("live events: a sweep failed", ["error": String(describing: error)])
            return
        }
        let checked = Set(sessions)
        let ready: [Delivery] = lock.withLock {
            counters.sweeps += 1
            var ready: [Delivery] = []
            for (userID, position) in positions where (found.latest[userID] ?? 0) > position { markDirty(userID) }
            for sessionID in checked.subtracting(found.liveSessions) {
                for subscriber in subscribers(ofSession: sessionID) {
                    end(subscriber)
                    if let delivery = take(subscriber) { ready.append(delivery) }
                }
            }
            return ready
        }
        for delivery in ready { delivery.send() }
    }

    /// Refreshes the marks of users with streams here, so that housekeeping never takes them for a
    /// dead instance's (idle users' marks age, and go after `watchLinger`).
    private func refreshWatches() {
        let marks = lock.withLock { Array(watched.filter { idleSince[$0] == nil }) }
        guard !marks.isEmpty else { return }
        do {
            try source.watch(userIDs: marks)
        } catch {
            logger.warning("live events: could not refresh marks", ["error": String(describing: error)])
        }
    }

    /// Once a second: a comment to each stream that has been quiet for `heartbeat`.
    private func beat() {
        let quiet = configuration.heartbeat.nanoseconds
        let ready: [Delivery] = lock.withLock {
            let now = monotonicNanoseconds()
            var ready: [Delivery] = []
            for subscribers in byUser.values {
                for subscriber in subscribers.values where subscriber.waiter != nil && now - subscriber.lastSentAt >= quiet {
                    append(LiveEventHub.comment, to: subscriber)
                    if let delivery = take(subscriber) { ready.append(delivery) }
                }
            }
            return ready
        }
        for delivery in ready { delivery.send() }
    }
}

/// The body of one `GET /users/me/events`: what the hub has for its subscriber, as it comes.
/// Dropping it (the client went away, the server closed the connection) ends the subscription.
public final class LiveEventStream: ResponseEventStream {
    private let hub: LiveEventHub
    private let subscriber: LiveEventHub.Subscriber

    init(hub: LiveEventHub, subscriber: LiveEventHub.Subscriber) {
        self.hub = hub
        self.subscriber = subscriber
    }

    public func next(_ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        hub.next(subscriber, completion)
    }

    /// 32 KiB (64 KiB as Linux counts it): beyond what the hub holds unread (`maxPendingBytes`),
    /// an unread stream costs the machine this much, not the megabytes the kernel would otherwise
    /// let its buffer grow to; and its reader falls behind, gets `resync` and is closed, sooner.
    public var sendBufferBytes: Int? { 32 * 1024 }

    deinit {
        hub.remove(subscriber)
    }
}
