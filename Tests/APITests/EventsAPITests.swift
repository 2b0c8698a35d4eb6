import API
import Foundation
import Glibc
import JSON
import LiveEvents
import Postgres
import TestSupport
import Testing

/// `GET /users/me/events` (`../shared/API.md`, "Live changes") on real servers and a real
/// PostgreSQL: what a change sends, in what order, what a resumed stream gets, and how a stream
/// ends.
@Suite(.testThreads, .serialized)
struct EventsAPITests {
    static func server(_ name: String, sharingDatabaseWith sibling: TestServer? = nil) throws -> TestServer {
        try TestServer("events_\(name)", sharingDatabaseWith: sibling) { configuration in
            configuration.thumbnails.helpers = 0
            configuration.liveEvents.heartbeat = .seconds(1)
        }
    }

    @Test func changesReachAnOpenStreamInOrderWithTheirRepresentations() throws {
        let server = try Self.server("order")
        defer { server.shutdown() }
        let account = try server.register()
        let stream = try EventStreamReader(port: server.port, token: account.token)
        defer { stream.close() }
        try #require(stream.status == 200)
        #expect(stream.headers["Content-Type"] == "text/event-stream; charset=utf-8")
        #expect(stream.headers["Transfer-Encoding"] == "chunked")

        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "Ayu"}"#).status == 200)
        var events = [try #require(try stream.next())]
        let uploaded = try ImageScenarios.upload(server, account.token, "image/png", RealFiles.png3x2)
        try #require(uploaded.status == 201, "\(uploaded.text)")
        let imageID = try #require(uploaded.json["id"]?.stringValue)
        // Read before the deletion: an image deleted before its event went out has only `image_deleted`.
        events.append(try #require(try stream.next()))
        let listed = try server.call("GET", "/users/me/images", token: account.token).json
        #expect(try server.call("DELETE", "/users/me/images/\(imageID)", token: account.token).status == 204)
        events.append(try #require(try stream.next()))

        #expect(events.map(\.name) == ["profile", "image_added", "image_deleted"])
        let ids = events.compactMap { $0.id.flatMap { Int64($0) } }
        #expect(ids.count == 3 && ids == ids.sorted() && Set(ids).count == 3, "\(events)")
        // `profile` is the user as GET /users/me shows them; `image_added` as the list shows the image.
        let profile = try events[0].json
        #expect(profile["firstname"]?.stringValue == "Ayu" && profile["id"]?.stringValue == account.id)
        #expect(keys(profile) == keys(try server.me(account.token).json))
        let added = try events[1].json
        #expect(added["id"]?.stringValue == imageID)
        #expect(keys(added) == keys(listed["images"]?[0]) && added["sha256"] == listed["images"]?[0]?["sha256"])
        #expect(try events[2].json == JSONValue.object(["id": .string(imageID)]))
        // Another user's changes never reach this stream.
        let other = try server.register()
        #expect(try server.call("PATCH", "/users/me", token: other.token, json: #"{"firstname": "Other"}"#).status == 200)
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"lastname": "Mine"}"#).status == 200)
        let next = try #require(try stream.next())
        #expect(try next.name == "profile" && next.json["lastname"]?.stringValue == "Mine", "\(next)")
    }

    @Test func aResumedStreamMissesNothingAndRepeatsNothing() throws {
        let server = try Self.server("resume")
        defer { server.shutdown() }
        let account = try server.register()
        let first = try EventStreamReader(port: server.port, token: account.token)
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"n": 1}}"#).status == 200)
        let seen = try #require(try first.next())
        let lastID = try #require(seen.id)
        first.close()

        // While no stream is open: two profile changes and an image.
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"n": 2}}"#).status == 200)
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"n": 3}}"#).status == 200)
        let uploaded = try ImageScenarios.upload(server, account.token, "image/png", RealFiles.png3x2)
        try #require(uploaded.status == 201)

        let resumed = try EventStreamReader(port: server.port, token: account.token, lastEventID: lastID)
        defer { resumed.close() }
        // The two profile changes are one event, the later (each shows the user as they are now).
        let missed = try resumed.next(2)
        #expect(missed.map(\.name) == ["profile", "image_added"], "\(missed)")
        #expect(missed.compactMap { $0.id.flatMap { Int64($0) } } == [2, 3].map { Int64(lastID)! + $0 }, "\(missed)")
        #expect(try missed[0].json["data"]?["n"] == 3, "the user as the later change left it: \(missed[0])")
        // Then live again, after the last one, with nothing repeated.
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"n": 4}}"#).status == 200)
        let live = try #require(try resumed.next())
        #expect(live.id == String(Int64(lastID)! + 4), "\(live)")

        // An id whose events were purged: the client is told to reload.
        try server.withDatabase { connection in _ = try connection.execute("DELETE FROM user_events WHERE user_id = \(UUID(uuidString: account.id)!)")
        }
        let stale = try EventStreamReader(port: server.port, token: account.token, lastEventID: lastID)
        defer { stale.close() }
        let resync = try #require(try stale.next())
        #expect(resync.name == "resync" && resync.id == String(Int64(lastID)! + 4), "\(resync)")

        // A Last-Event-ID that is no event id of ours is refused.
        let bad = try server.call("GET", "/users/me/events", token: account.token, headers: [("Last-Event-ID", "x1")])
        #expect(bad.status == 400 && bad.json["code"]?.stringValue == "invalid_last_event_id", "\(bad.text)")
        #expect(try server.call("GET", "/users/me/events").status == 401)
    }

    @Test func theStreamEndsWithItsSessionAndOnlyThen() throws {
        let server = try Self.server("ends")
        defer { server.shutdown() }
        let account = try server.register()
        let second = try server.newSession(account)
        let third = try server.newSession(account)
        let mine = try EventStreamReader(port: server.port, token: account.token)
        defer { mine.close() }
        let other = try EventStreamReader(port: server.port, token: second)
        defer { other.close() }
        let survivor = try EventStreamReader(port: server.port, token: third)
        defer { survivor.close() }

        // Signing out one session ends its stream only: `session_ended`, then the body ends.
        #expect(try server.call("POST", "/users/signout", token: second).status == 204)
        #expect(try other.rest().map(\.name) == ["session_ended"])
        // A password change ends every other session, and their streams with them.
        let newPassword = server.uniquePassword("new")
        let changed = try server.call(
            "POST", "/users/me/password", token: account.token,
            json: #"{"oldPassword": \#(jsonString(account.password)), "newPassword": \#(jsonString(newPassword))}"#)
        #expect(changed.status == 200, "\(changed.text)")
        #expect(try survivor.rest().map(\.name) == ["session_ended"])
        // The session that changed the password was replaced by a new one: its stream ended too.
        #expect(try mine.rest().map(\.name) == ["session_ended"])
        #expect(try server.call("GET", "/users/me/events", token: account.token).status == 401)
    }

    @Test func quietStreamsGetAHeartbeatAndAShutdownEndsThem() throws {
        let server = try Self.server("beat")
        defer { server.shutdown() }
        let account = try server.register()
        let stream = try EventStreamReader(port: server.port, token: account.token)
        defer { stream.close() }
        // The heartbeat is 1 s here: a few seconds of nothing bring comments, not events.
        let waited = ContinuousClock.now
        while stream.comments < 2, ContinuousClock.now - waited < .seconds(5) { #expect(try stream.nextEventOrComment() == nil) }
        #expect(stream.comments >= 2 && stream.retry == 2000)
        // A server that stops ends the stream's body (its client reconnects elsewhere).
        server.shutdown()
        #expect(try stream.rest().isEmpty && stream.ended)
    }

    @Test func aLostListeningConnectionDelaysEventsAndLosesNone() throws {
        let server = try TestServer("events_listener") { configuration in
            configuration.liveEvents.firstReconnectDelay = .seconds(1)
            // Only the catch-up after the reconnection may bring what was lost, not a sweep.
            configuration.liveEvents.sweepInterval = .seconds(600)
        }
        defer { server.shutdown() }
        let account = try server.register()
        let second = try server.newSession(account)
        let stream = try EventStreamReader(port: server.port, token: account.token)
        defer { stream.close() }
        let other = try EventStreamReader(port: server.port, token: second)
        defer { other.close() }
        let hub = try #require(server.app.liveEvents)
        let sessions = try server.call("GET", "/users/me/sessions", token: account.token).json["sessions"]?.arrayValue ?? []
        let current = try #require(sessions.first { $0["current"]?.boolValue == true }?["id"]?.stringValue)
        // In one transaction: a change and a sign-out, and the listening connection killed before
        // they commit, so that their notifications are lost for sure (the hub waits a second
        // before it connects again here).
        let connects = hub.statistics.listenerConnects
        let user = try #require(UUID(uuidString: account.id))
        try server.withDatabase { connection in
            try connection.withTransaction { connection in
                _ = try connection.execute("UPDATE users SET firstname = 'Again', version = version + 1 WHERE id = \(user)")
                _ = try connection.execute("DELETE FROM sessions WHERE user_id = \(user) AND id <> \(try #require(UUID(uuidString: current)))")
                let ended = try connection.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'exosphere-events' AND datname = current_database()"
                )
                try #require(ended.count == 1)
            }
        }
        try #require(hub.statistics.listenerConnects == connects, "the hub listened again before the commit")
        // Once it listens again, the catch-up brings both.
        let event = try #require(try stream.next())
        #expect(try event.name == "profile" && event.json["firstname"]?.stringValue == "Again", "\(event)")
        #expect(try other.rest().map(\.name) == ["session_ended"])
    }

    /// The database notifies only for users marked as having streams; a change that no
    /// notification carried (here: its user's mark deleted behind the hub's back, so it is not
    /// even kept) is still noticed by the next sweep: the stream is told to reload; so is a session
    /// that expired. And the mark goes when the user's last stream here has ended (at once here,
    /// 10 minutes by default).
    @Test func whatNoNotificationCarriedComesWithTheSweep() throws {
        let server = try TestServer("events_sweep") { configuration in
            configuration.liveEvents.sweepInterval = .seconds(1)
            configuration.liveEvents.watchLinger = .zero
            configuration.liveEvents.firstReconnectDelay = .seconds(600)
        }
        defer { server.shutdown() }
        let account = try server.register()
        let user = try #require(UUID(uuidString: account.id))
        func marks() throws -> Int {
            try server.withDatabase { try $0.query("SELECT count(*) FROM live_streams WHERE user_id = \(user)")[0].decode(Int.self, at: 0) }
        }
        let first = try EventStreamReader(port: server.port, token: account.token)
        try waitUntil(timeout: .seconds(10), "the user's mark") { try marks() == 1 }
        first.close()
        try waitUntil(timeout: .seconds(10), "the mark to go with the last stream") { try marks() == 0 }

        let stream = try EventStreamReader(port: server.port, token: account.token)
        defer { stream.close() }
        try waitUntil(timeout: .seconds(10), "the user's mark") { try marks() == 1 }
        try server.withDatabase { _ = try $0.execute("DELETE FROM live_streams WHERE user_id = \(user)") }
        let sweeps = try #require(server.app.liveEvents).statistics.sweeps
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "Swept"}"#).status == 200)
        let event = try #require(try stream.next())
        #expect(event.name == "resync", "\(event)")
        #expect(try #require(server.app.liveEvents).statistics.sweeps > sweeps)

        // A change that is kept but whose notification is lost (nothing listens: the hub waits
        // 10 minutes before it tries again here) comes with the next sweep, whole.
        try server.withDatabase { connection in
            _ = try connection.execute("INSERT INTO live_streams (user_id, instance_id) VALUES (\(user), gen_random_uuid())")
            let ended = try connection.query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'exosphere-events' AND datname = current_database()")
            try #require(ended.count == 1)
        }
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "Swept"}"#).status == 200)
        let swept = try #require(try stream.next())
        #expect(try swept.name == "profile" && swept.json["firstname"]?.stringValue == "Swept", "\(swept)")
        #expect(try #require(server.app.liveEvents).isListening == false)

        // A session past its absolute end (a year, on the server's clock) is no session: the sweep
        // ends its stream (housekeeping deletes such sessions only every 10 minutes).
        server.advanceClock(by: 366 * 86_400)
        #expect(try stream.rest().map(\.name) == ["session_ended"])
    }

    /// B's sweep is ten minutes away, and B's stream reads wait 30 s at most: every event must
    /// come by A's notification to B, not by a sweep (the 5 s default would otherwise deliver it).
    @Test func aChangeOnOneInstanceReachesAStreamOnTheOther() throws {
        let a = try Self.server("instance_a")
        defer { a.shutdown() }
        let b = try TestServer("events_instance_b", sharingDatabaseWith: a) { configuration in
            configuration.thumbnails.helpers = 0
            configuration.liveEvents.heartbeat = .seconds(1)
            configuration.liveEvents.sweepInterval = .seconds(600)
        }
        defer { b.shutdown() }
        let hub = try #require(b.app.liveEvents)
        let account = try a.register()
        let stream = try EventStreamReader(port: b.port, token: account.token, timeout: .seconds(30))
        defer { stream.close() }
        let before = hub.statistics
        var delays: [Duration] = []
        for round in 0..<20 {
            let sent = ContinuousClock.now
            #expect(try a.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"round": \#(round)}}"#).status == 200)
            let event = try #require(try stream.next())
            delays.append(ContinuousClock.now - sent)
            #expect(try event.json["data"]?["round"]?.int64Value == Int64(round), "\(event)")
        }
        // Brought by catch-ups that notifications asked for: B swept nothing meanwhile.
        let after = hub.statistics
        #expect(after.sweeps == before.sweeps && after.sweepFailures == before.sweepFailures, "\(before) then \(after)")
        #expect(after.catchUps > before.catchUps && after.delivered - before.delivered >= 20, "\(before) then \(after)")
        // A change and an upload at once arrive in the order they committed.
        #expect(try a.call("PATCH", "/users/me", token: account.token, json: #"{"lastname": "Both"}"#).status == 200)
        #expect(try ImageScenarios.upload(a, account.token, "image/png", RealFiles.png3x2).status == 201)
        #expect(try stream.next(2).map(\.name) == ["profile", "image_added"])
        print("EventsAPITests: A's PATCH to B's stream, 20 rounds, slowest \(delays.max()!), median \(delays.sorted()[10])")
    }
}

/// A `profile` event and the session cache: a client that reads the user again when the event
/// comes gets the user the event shows, though the change was committed elsewhere (here by SQL,
/// as another instance would) and the cache's feed has not read it yet.
@Suite(.testThreads) struct EventsAndTheSessionCacheTests {
    @Test func theUserReadOnAProfileEventIsTheChangedOne() throws {
        // The feed reads once at the start, then not for minutes, and the cache serves meanwhile:
        // only the event's own invalidation can keep the next read from the cached user.
        let server = try TestServer("events_cache") { configuration in
            configuration.thumbnails.helpers = 0
            configuration.accounts.sessionCacheStaleness = .seconds(600)
            configuration.accounts.sessionCachePollInterval = .seconds(300)
        }
        defer { server.shutdown() }
        let account = try server.register()
        let stream = try EventStreamReader(port: server.port, token: account.token)
        defer { stream.close() }
        try #require(stream.status == 200)
        // Cached after the stream's opening, which drops the user's entries (a route that writes).
        let before = try server.call("GET", "/users/me", token: account.token)
        try #require(before.status == 200)
        let etag = try #require(before.header("ETag"))
        let statistics = server.app.accounts.sessionCache.statistics
        let hits = statistics.hits.load(ordering: .relaxed)
        #expect(try server.call("GET", "/users/me", token: account.token).status == 200)
        try #require(statistics.hits.load(ordering: .relaxed) > hits, "the cache serves the user")

        // Not `withDatabase`, which waits for the feed as the server's own writes do.
        let connection = try PostgresConnection(configuration: try PostgresConfiguration(connectionString: server.databaseURL))
        _ = try connection.execute("UPDATE users SET firstname = 'Elsewhere', version = version + 1 WHERE id = \(account.id)::uuid")
        connection.close()
        let event = try #require(try stream.next())
        #expect(event.name == "profile")
        let after = try server.call("GET", "/users/me", token: account.token, headers: [("If-None-Match", etag)])
        #expect(after.status == 200, "not the cached user's 304")
        #expect(after.json["firstname"]?.stringValue == "Elsewhere")
    }
}
