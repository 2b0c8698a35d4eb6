import API
import Foundation
import JSON
import Postgres
import Synchronization
import TestSupport
import Testing

/// The session cache (`SessionCache`, `InvalidationFeed`) on two real instances of one real
/// database: a token revoked or a profile changed on one is refused or seen on the other within
/// the bound, and at once on the one that did it, with the feed's connection killed along the way.
///
/// The bound holds by construction (an instance serves from its cache only while its feed has read
/// every change sent less than `staleness` ago), so these checks cannot pass by luck of timing:
/// a request sent after the bound that is answered from a cache that missed the change fails them,
/// however fast or slow the machine.
@Suite(.testThreads, .drill, .serialized)
struct SessionCacheAPITests {
    /// The contract's bound; the servers serve at most `staleness` (80 ms) old.
    static let bound: Duration = .milliseconds(100)

    /// Two instances of one database; `shutdown()` stops both.
    struct Pair {
        let a: TestServer
        let b: TestServer
        func shutdown() {
            b.shutdown()
            a.shutdown()
        }
    }

    static func pair(_ name: String) throws -> Pair {
        // The password changes of `passwordChangesRacingReadsOnTheOtherInstance` are 200 rounds of
        // one user's: past the 10 an hour a user may make (0: no limit here).
        let adjust = { (configuration: inout Configuration) in
            configuration.thumbnails.helpers = 0
            configuration.accounts.passwordChangesPerUser.limit = 0
        }
        let a = try TestServer("cache_\(name)_a", adjust)
        do {
            return Pair(a: a, b: try TestServer("cache_\(name)_b", sharingDatabaseWith: a, adjust))
        } catch {
            a.shutdown()
            throw error
        }
    }

    /// One request's send time and answer.
    struct Observation: Sendable {
        let sent: ContinuousClock.Instant
        let answered: ContinuousClock.Instant
        let status: Int
    }

    /// `GET /users/me` with `token` on `server` until it is refused with `401` (2 s at most; a
    /// `503` of a loaded machine is not a refusal); every answer.
    static func readUntilRefused(_ server: TestServer, _ token: String) throws -> [Observation] {
        var seen: [Observation] = []
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline {
            let sent = ContinuousClock.now
            let status = try server.me(token).status
            seen.append(Observation(sent: sent, answered: .now, status: status))
            if status == 401 { break }
        }
        return seen
    }

    /// The window of one revocation answered at `revoked`: how long after it the other instance
    /// still answered 200 (zero when it never did); and the requests sent past the bound that it
    /// answered 200, which must be none.
    static func window(_ seen: [Observation], after revoked: ContinuousClock.Instant) -> (Duration, late: [Observation]) {
        let served = seen.filter { $0.status == 200 }
        let window = served.map { $0.answered - revoked }.max().map { max($0, .zero) } ?? .zero
        return (window, served.filter { $0.sent > revoked + bound })
    }

    static func describe(_ windows: [Duration]) -> String {
        let sorted = windows.sorted()
        func at(_ fraction: Double) -> Duration { sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] }
        return "n \(sorted.count), zero \(sorted.filter { $0 == .zero }.count), p50 \(at(0.5)), p99 \(at(0.99)), max \(sorted.last!)"
    }

    /// Ends both instances' feed connections, as a network failure or a database restart would.
    static func killFeeds(_ server: TestServer) throws -> Int {
        try server.withDatabase { connection in
            try connection.query(
                """
                SELECT (count(*) FILTER (WHERE pg_terminate_backend(pid)))::int8 FROM pg_stat_activity
                WHERE application_name = 'exosphere-cache' AND datname = current_database()
                """)[0].decode(Int.self, at: 0)
        }
    }

    @Test func aSignOutOnOneInstanceIsRefusedThereAtOnceAndOnTheOtherWithinTheBound() throws {
        let pair = try Self.pair("signout")
        defer { pair.shutdown() }
        let (a, b) = (pair.a, pair.b)
        let account = try a.register()
        let hitsBefore = try #require(try b.metric("exosphere_session_cache_lookups_total{outcome=\"hit\"}"))
        var windows: [Duration] = []
        var killed = 0
        for round in 0..<1_000 {
            if round % 250 == 125 { killed += try Self.killFeeds(a) }
            let token = try a.newSession(account)
            // B reads it twice (the second from its cache, once the feed is back), A once.
            #expect(try b.me(token).status == 200)
            #expect(try b.me(token).status == 200)
            #expect(try a.me(token).status == 200)
            try #require(try a.call("POST", "/users/signout", token: token).status == 204)
            let revoked = ContinuousClock.now
            // The instance that did it refuses at once.
            #expect(try a.me(token).status == 401, "round \(round): A still took the token it signed out")
            let seen = try Self.readUntilRefused(b, token)
            #expect(seen.last?.status == 401, "round \(round): B never refused the token")
            let (window, late) = Self.window(seen, after: revoked)
            #expect(late.count == 0, "round \(round): B answered 200 to \(late.count) requests sent more than \(Self.bound) after the sign-out")
            windows.append(window)
        }
        #expect(killed >= 6, "each kill ends both feeds")
        let hits = try #require(try b.metric("exosphere_session_cache_lookups_total{outcome=\"hit\"}")) - hitsBefore
        #expect(hits >= 500, "B answered from its cache \(hits) times in 1,000 rounds")
        print("SessionCacheAPITests: sign-out on A, then the token on B: \(Self.describe(windows)), B's cache hits \(hits)")
    }

    @Test func passwordChangesRacingReadsOnTheOtherInstance() throws {
        let pair = try Self.pair("password")
        defer { pair.shutdown() }
        let (a, b) = (pair.a, pair.b)
        var account = try a.register()
        var windows: [Duration] = []
        for round in 0..<200 {
            let token = try a.newSession(account)
            #expect(try b.me(token).status == 200)
            // Four readers on B with the token, the change on A at once; the readers stop once
            // refused (or after 2 s).
            let observations = Mutex<[Observation]>([])
            let changed = Mutex<(reply: Reply, at: ContinuousClock.Instant)?>(nil)
            let password = a.uniquePassword("changed \(round)")
            let (oldPassword, oldToken) = (account.password, account.token)
            let barrier = Barrier(5)
            try onThreads(5) { index in
                try barrier.arrive()
                if index == 0 {
                    let reply = try a.call(
                        "POST", "/users/me/password", token: oldToken,
                        json: #"{"oldPassword": \#(jsonString(oldPassword)), "newPassword": \#(jsonString(password))}"#)
                    changed.withLock { $0 = (reply, .now) }
                } else {
                    // Until refused, or 2 s after the change was answered (it may take long on a
                    // loaded machine).
                    var seen: [Observation] = []
                    let limit = ContinuousClock.now + .seconds(60)
                    while ContinuousClock.now < limit, seen.last?.status != 401 {
                        if let answered = changed.withLock({ $0?.at }), ContinuousClock.now > answered + .seconds(2) { break }
                        let sent = ContinuousClock.now
                        let status = try b.me(token).status
                        seen.append(Observation(sent: sent, answered: .now, status: status))
                    }
                    #expect(seen.last?.status == 401, "round \(round): a reader on B was never refused")
                    observations.withLock { $0 += seen }
                }
            }
            let (change, revoked) = try #require(changed.withLock { $0 })
            try #require(change.status == 200, "\(change.text)")
            account.password = password
            account.token = try #require(change.json["accessToken"]?.stringValue)
            a.remember(token: account.token)
            #expect(try a.me(token).status == 401, "round \(round): A still took a token its password change ended")
            let (window, late) = Self.window(observations.withLock { $0 }, after: revoked)
            #expect(late.count == 0, "round \(round): B answered 200 to \(late.count) requests sent more than \(Self.bound) after the change")
            #expect(try b.me(account.token).status == 200)
            windows.append(window)
        }
        print("SessionCacheAPITests: password change on A racing 4 readers on B: \(Self.describe(windows))")
    }

    @Test func aProfileWriteIsReadAtOnceWhereItWasMadeAndWithinTheBoundElsewhere() throws {
        let pair = try Self.pair("profile")
        defer { pair.shutdown() }
        let (a, b) = (pair.a, pair.b)
        let account = try a.register()
        var windows: [Duration] = []
        for round in 0..<200 {
            #expect(try a.me(account.token).status == 200)
            #expect(try b.me(account.token).status == 200)
            let (writer, reader) = round.isMultiple(of: 2) ? (a, b) : (b, a)
            let written = try writer.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"round": \#(round)}}"#)
            try #require(written.status == 200)
            let acknowledged = ContinuousClock.now
            let etag = try #require(written.header("ETag"))
            // Where it was written, never older than the write it acknowledged.
            #expect(try writer.me(account.token).json["data"]?["round"]?.int64Value == Int64(round))
            // Elsewhere: the old version only within the bound; a stale 304 counts as old.
            var seen: [Observation] = []
            let deadline = ContinuousClock.now + .seconds(2)
            while ContinuousClock.now < deadline {
                let sent = ContinuousClock.now
                let reply = try reader.me(account.token)
                guard reply.status == 200 else { continue }  // a 503 of a loaded machine shows no version
                let current = reply.header("ETag") == etag
                seen.append(Observation(sent: sent, answered: .now, status: current ? 0 : 200))
                if current { break }
            }
            #expect(seen.last?.status == 0, "round \(round): the other instance never read the write")
            let (window, late) = Self.window(seen, after: acknowledged)
            #expect(late.count == 0, "round \(round): an old profile answered to a request sent more than \(Self.bound) after the write")
            windows.append(window)
        }
        print("SessionCacheAPITests: PATCH on one instance, GET on the other: \(Self.describe(windows))")
    }

    @Test func anAdministratorsRevocationIsRefusedThereAtOnceAndElsewhereWithinTheBound() throws {
        let pair = try Self.pair("admin")
        defer { pair.shutdown() }
        let (a, b) = (pair.a, pair.b)
        let admin = try AdminAPITests.rootAdmin(a)
        let account = try a.register()
        for round in 0..<50 {
            let token = try a.newSession(account)
            #expect(try a.me(token).status == 200)
            #expect(try b.me(token).status == 200)
            #expect(try a.call("DELETE", "/admin/users/\(account.id)/sessions", token: admin).status == 204)
            let revoked = ContinuousClock.now
            #expect(try a.me(token).status == 401, "round \(round): A still took a token its administrator revoked")
            #expect(try a.me(account.token).status == 401)
            let (_, late) = Self.window(try Self.readUntilRefused(b, token), after: revoked)
            #expect(late.count == 0, "round \(round)")
        }
    }

    @Test func withTheCacheOffEveryReadGoesToTheDatabase() throws {
        let server = try TestServer("cache_off") {
            $0.thumbnails.helpers = 0
            $0.accounts.sessionCacheBytes = 0
        }
        defer { server.shutdown() }
        let account = try server.register()
        for _ in 0..<3 { #expect(try server.me(account.token).status == 200) }
        let text = String(decoding: try server.call("GET", "/metrics").body, as: UTF8.self)
        #expect(!text.contains("exosphere_session_cache"), "no cache, no cache metrics")
        let backends = try server.withDatabase { connection in
            try connection.query(
                "SELECT count(*)::int8 FROM pg_stat_activity WHERE application_name = 'exosphere-cache' AND datname = current_database()"
            )[0].decode(Int.self, at: 0)
        }
        #expect(backends == 0, "no cache, no feed")
    }
}
