import API
import Accounts
import FoundationEssentials
import Glibc
import JSON
import Cryptography
import TestSupport
import Testing

/// Sign-out, session lists and revocation, bearer authentication and the sign-in throttle.
@Suite(
    .testThreads,
    .liveServer("sessions") { configuration in
        // A small, short throttle so the test can see it lock and unlock.
        configuration.accounts.signInPerEmailAndAddress = ThrottleRule(limit: 3, windowSeconds: 3)
    }, .serialized)
struct SessionsAPITests {
    let server: TestServer

    init() throws { server = try #require(TestServer.current) }

    // MARK: - Bearer authentication

    @Test func missingMalformedUnknownAndRevokedTokensGet401WithAChallenge() throws {
        let account = try server.register()
        let revoked = try server.newSession(account)
        #expect(try server.call("POST", "/users/signout", token: revoked).status == 204)
        let unknown = Base64URL.encode(try SecureRandom.bytes(count: 32))
        #expect(unknown.utf8.count == 43)

        let cases: [(String, [(String, String)], String)] = [
            ("missing", [], "/users/me"),
            ("scheme only", [("Authorization", "Bearer")], "/users/me"),
            ("scheme and space", [("Authorization", "Bearer ")], "/users/me"),
            ("basic", [("Authorization", "Basic x")], "/users/me"),
            ("basic with the token", [("Authorization", "Basic \(account.token)")], "/users/me"),
            ("token without scheme", [("Authorization", account.token)], "/users/me"),
            ("token in the query", [], "/users/me?access_token=\(account.token)"),
            ("token in the query (2)", [], "/users/me?token=\(account.token)"),
            ("too short", [("Authorization", "Bearer abc")], "/users/me"),
            ("too long", [("Authorization", "Bearer \(account.token)A")], "/users/me"),
            ("two tokens", [("Authorization", "Bearer \(account.token) \(account.token)")], "/users/me"),
            ("unknown", [("Authorization", "Bearer \(unknown)")], "/users/me"),
            ("revoked", [("Authorization", "Bearer \(revoked)")], "/users/me"),
        ]
        for (name, headers, target) in cases {
            for (method, path) in [("GET", target), ("GET", "/users/me/sessions"), ("GET", "/users/schema"), ("POST", "/users/signout")] {
                let reply = try server.send(
                    method, name.hasPrefix("token in the query") ? target.replacingPath(with: path) : path,
                    headers: headers)
                #expect(reply.status == 401, "\(name): \(method) \(path)")
                #expect(reply.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, "\(name)")
                #expect(reply.header("Content-Type") == "application/problem+json")
                #expect(reply.json["status"]?.numberValue?.text == "401")
                #expect(reply.code != nil)
            }
        }
        // Writes too.
        #expect(try server.call("PATCH", "/users/me", json: #"{"firstname": "x"}"#).status == 401)
        #expect(try server.call("PUT", "/users/me", json: #"{"email": "x@example.com"}"#).status == 401)
        #expect(try server.call("DELETE", "/users/me", json: #"{"password": "\#(account.password)"}"#).status == 401)
        #expect(
            try server.call(
                "POST", "/users/me/password", token: revoked,
                json: #"{"oldPassword": "\#(account.password)", "newPassword": "\#(server.uniquePassword())"}"#
            ).status == 401)
        // The scheme is case-insensitive; the real token still works.
        #expect(try server.send("GET", "/users/me", headers: [("Authorization", "bearer \(account.token)")]).status == 200)
        #expect(try server.me(account.token).status == 200)
    }

    // MARK: - Sign-out

    @Test func signOutScopes() throws {
        let account = try server.register()
        let a = account.token
        let b = try server.newSession(account)
        let c = try server.newSession(account)
        let d = try server.newSession(account)
        let other = try server.register()

        // Default scope is the current session; an empty body needs no Content-Type.
        #expect(try server.send("POST", "/users/signout", headers: [("Authorization", "Bearer \(a)")]).status == 204)
        #expect(try server.me(a).status == 401)
        #expect(try server.me(b).status == 200)

        #expect(try server.call("POST", "/users/signout", token: b, json: #"{"scope": "current"}"#).status == 204)
        #expect(try server.me(b).status == 401)
        #expect(try server.me(c).status == 200)

        let e = try server.newSession(account)
        #expect(try server.call("POST", "/users/signout", token: c, json: #"{"scope": "others"}"#).status == 204)
        #expect(try server.me(c).status == 200)
        #expect(try server.me(d).status == 401)
        #expect(try server.me(e).status == 401)

        let f = try server.newSession(account)
        #expect(try server.call("POST", "/users/signout", token: f, json: #"{"scope": "all"}"#).status == 204)
        #expect(try server.me(c).status == 401)
        #expect(try server.me(f).status == 401)
        // Another user's sessions are untouched by all of it.
        #expect(try server.me(other.token).status == 200)
        // Signing out again with the dead token is 401.
        #expect(try server.call("POST", "/users/signout", token: f, json: #"{"scope": "all"}"#).status == 401)
    }

    @Test func signOutRefusesBadScopesAndUnknownKeys() throws {
        let account = try server.register()
        for body in [#"{"scope": "everything"}"#, #"{"scope": 1}"#, #"{"scope": null}"#, #"{"scopes": "all"}"#] {
            let reply = try server.call("POST", "/users/signout", token: account.token, json: body)
            #expect(reply.status == 422, "\(body)")
        }
        #expect(try server.call("POST", "/users/signout", token: account.token, json: "{").status == 400)
        #expect(try server.call("POST", "/users/signout", token: account.token, json: #"{"scope": "all"}"#, contentType: "text/plain").status == 415)
        // None of the refused requests signed anyone out.
        #expect(try server.me(account.token).status == 200)
    }

    // MARK: - Session list

    @Test func sessionListShapeAndCurrentFlag() throws {
        let account = try server.register()
        let second = try server.newSession(account, userAgent: "ExoTest/2.0 (Linux)")
        let third = try server.newSession(account)
        let other = try server.register()

        let reply = try server.call("GET", "/users/me/sessions", token: second)
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json")
        #expect(keys(reply.json) == ["sessions"])
        let sessions = try #require(reply.json["sessions"]?.arrayValue)
        #expect(sessions.count == 3)
        for session in sessions {
            #expect(keys(session) == ["authenticatedAt", "createdAt", "current", "expiresAt", "id", "lastSeenAt", "userAgent"])
            for key in ["createdAt", "lastSeenAt", "expiresAt", "authenticatedAt"] {
                #expect(epochMilliseconds(session[key]?.stringValue ?? "") != nil, "\(key)")
            }
            // Each was opened by a sign-in (or the registration): proved when it started.
            #expect(session["authenticatedAt"] == session["createdAt"])
            #expect(session["id"]?.stringValue.flatMap { UUID(uuidString: $0) } != nil)
            #expect(session["current"]?.boolValue != nil)
        }
        let current = sessions.filter { $0["current"] == .bool(true) }
        #expect(current.count == 1)
        #expect(current.first?["userAgent"]?.stringValue == "ExoTest/2.0 (Linux)")
        // The list is the same from another session, with the flag moved.
        let fromThird = try #require(try server.call("GET", "/users/me/sessions", token: third).json["sessions"]?.arrayValue)
        #expect(Set(fromThird.compactMap { $0["id"]?.stringValue }) == Set(sessions.compactMap { $0["id"]?.stringValue }))
        #expect(fromThird.filter { $0["current"] == .bool(true) }.count == 1)
        #expect(fromThird.first { $0["current"] == .bool(true) }?["id"] != current.first?["id"])
        // Another user sees only their own.
        let theirs = try #require(try server.call("GET", "/users/me/sessions", token: other.token).json["sessions"]?.arrayValue)
        #expect(theirs.count == 1)
        let theirIDs = Set(theirs.compactMap { $0["id"]?.stringValue })
        let disjoint = theirIDs.isDisjoint(with: sessions.compactMap { $0["id"]?.stringValue })
        #expect(disjoint)
        // Nothing secret in the list.
        #expect(!reply.text.contains(account.token) && !reply.text.contains(second) && !reply.text.contains(third))
    }

    // MARK: - Revoking one session

    @Test func deleteASessionThen404() throws {
        let account = try server.register()
        let second = try server.newSession(account, userAgent: "to-be-revoked")
        let sessions = try #require(try server.call("GET", "/users/me/sessions", token: account.token).json["sessions"]?.arrayValue)
        let target = try #require(sessions.first { $0["userAgent"]?.stringValue == "to-be-revoked" }?["id"]?.stringValue)

        let deleted = try server.call("DELETE", "/users/me/sessions/\(target)", token: account.token)
        #expect(deleted.status == 204)
        #expect(deleted.body.isEmpty)
        #expect(try server.me(second).status == 401)
        #expect(try server.me(account.token).status == 200)
        let again = try server.call("DELETE", "/users/me/sessions/\(target)", token: account.token)
        #expect(again.status == 404)
        #expect(again.header("Content-Type") == "application/problem+json")
        let list = try #require(try server.call("GET", "/users/me/sessions", token: account.token).json["sessions"]?.arrayValue)
        #expect(list.count == 1)
    }

    @Test func anotherUsersSessionIsNotFound() throws {
        let alice = try server.register()
        let bob = try server.register()
        let bobSession = try #require(try server.call("GET", "/users/me/sessions", token: bob.token).json["sessions"]?[0]?["id"]?.stringValue)

        let reply = try server.call("DELETE", "/users/me/sessions/\(bobSession)", token: alice.token)
        #expect(reply.status == 404)
        let unknown = try server.call("DELETE", "/users/me/sessions/\(UUID().uuidString.lowercased())", token: alice.token)
        #expect(unknown.status == 404)
        #expect(reply.body == unknown.body, "another user's session looks exactly like an unknown one")
        #expect(try server.me(bob.token).status == 200)
        for bad in ["not-a-uuid", "1", "%00", "..", String(repeating: "a", count: 300)] {
            #expect(try server.call("DELETE", "/users/me/sessions/\(bad)", token: alice.token).status == 404, "\(bad)")
        }
        // Upper-case spelling of one's own session id works (ids are opaque, but this one parses).
        let own = try #require(try server.call("GET", "/users/me/sessions", token: alice.token).json["sessions"]?[0]?["id"]?.stringValue)
        let other = try server.newSession(alice)
        #expect(try server.call("DELETE", "/users/me/sessions/\(own)", token: other).status == 204)
        #expect(try server.me(alice.token).status == 401)
        // Without a token: 401, not 404.
        #expect(try server.call("DELETE", "/users/me/sessions/\(bobSession)").status == 401)
    }

    // MARK: - Throttling sign-in

    @Test func signInIsThrottledPerEmailAndTheOwnersSessionsKeepWorking() throws {
        let account = try server.register()
        let bystander = try server.register()
        for _ in 0..<3 {
            let reply = try server.signIn(account.email, server.uniquePassword("wrong"))
            #expect(reply.status == 401)
        }
        // Locked: even the right password, and also spelled differently.
        for attempt in [
            (account.email, account.password), (account.email.uppercased(), account.password),
            (account.email, server.uniquePassword("wrong")),
        ] {
            let reply = try server.signIn(attempt.0, attempt.1)
            #expect(reply.status == 429)
            #expect(reply.code == "too_many_attempts")
            let retry = try #require(reply.header("Retry-After").flatMap { Int($0) }, "Retry-After is an integer")
            #expect(retry >= 1 && retry <= 3)
            #expect(reply.json["accessToken"] == nil)
        }
        // The owner's session is unaffected, and so is everyone else.
        #expect(try server.me(account.token).status == 200)
        #expect(try server.signIn(bystander.email, bystander.password).status == 200)

        // An unknown email locks the same way, so the lock is no account oracle.
        let ghost = server.uniqueEmail("ghost")
        for _ in 0..<3 { #expect(try server.signIn(ghost, server.uniquePassword("wrong")).status == 401) }
        #expect(try server.signIn(ghost, server.uniquePassword("wrong")).status == 429)

        // The window ends; the right password works again and resets the count.
        server.advanceClock(by: 3.2)
        #expect(try server.signIn(account.email, account.password).status == 200)
        #expect(try server.signIn(account.email, server.uniquePassword("wrong")).status == 401)
        #expect(try server.signIn(account.email, account.password).status == 200)
    }

    // MARK: - Isolation between users

    @Test func aUserNeverSeesAnotherUsersData() throws {
        let alice = try server.register(extra: #", "firstname": "Alice", "data": {"secretNote": "alice-only"}"#)
        let bob = try server.register(extra: #", "firstname": "Bob""#)
        let bobsView = try server.me(bob.token)
        #expect(bobsView.json["id"]?.stringValue == bob.id)
        #expect(!bobsView.text.contains("alice-only"))
        #expect(!bobsView.text.contains(alice.email))
        // Bob's writes change Bob only; there is no path to address Alice.
        #expect(try server.call("PATCH", "/users/me", token: bob.token, json: #"{"firstname": "Mallory"}"#).status == 200)
        #expect(try server.me(alice.token).json["firstname"]?.stringValue == "Alice")
        for path in ["/users/\(alice.id)", "/users/\(alice.id)/sessions", "/users/me/\(alice.id)"] {
            #expect(try server.call("GET", path, token: bob.token).status == 404, "\(path)")
            #expect(try server.call("PATCH", path, token: bob.token, json: #"{"firstname": "x"}"#).status == 404, "\(path)")
        }
        // An ETag of Alice is no use to Bob.
        let aliceTag = try #require(try server.me(alice.token).header("ETag"))
        #expect(try server.call("GET", "/users/me", token: bob.token, headers: [("If-None-Match", aliceTag)]).status == 200)
        #expect(
            try server.call(
                "PATCH", "/users/me", token: bob.token, json: #"{"firstname": "B"}"#,
                headers: [("If-Match", aliceTag)]
            ).status == 412)
    }
}

extension String {
    /// `/users/me?query` with its path replaced.
    func replacingPath(with path: String) -> String {
        guard let question = firstIndex(of: "?") else { return path }
        return path + self[question...]
    }
}

/// Idle timeout and absolute lifetime, with both made short.
@Suite(
    .testThreads,
    .liveServer("lifetime") { configuration in
        configuration.accounts.lifetime.idleSeconds = 1.5
        configuration.accounts.lifetime.absoluteSeconds = 4
    })
struct SessionLifetimeAPITests {
    let server: TestServer

    init() throws { server = try #require(TestServer.current) }

    @Test func sessionsIdleOutUnlessUsedAndEndAtTheirAbsoluteLifetime() throws {
        let account = try server.register()
        let idle = account.token
        // The session in use is the last one made, and the walk starts at once: the clock also
        // runs in real time, and a machine under load may take longer than the idle timeout
        // between a session's birth and its first use.
        let created = Int64(server.clock.now().timeIntervalSince1970 * 1_000)
        let signIn = try server.signIn(account.email, account.password)
        let active = try #require(signIn.json["accessToken"]?.stringValue)
        // Time is the server's clock, moved 0.3 s at a time: the same walk as in real time, without the wait.
        let start = server.clock.now()
        // The session body's expiresAt is the earlier end: the idle one.
        let expires = try #require(epochMilliseconds(signIn.json["expiresAt"]?.stringValue ?? ""))
        #expect(abs(expires - created - 1_500) < 1_000)

        var idleChecked = false
        var lastActive = 0
        while server.clock.now().timeIntervalSince(start) < 4.7 {
            let elapsed = server.clock.now().timeIntervalSince(start)
            let status = try server.me(active).status
            if elapsed < 3.6 {
                #expect(status == 200, "a session in use does not idle out (at \(elapsed) s)")
            }
            lastActive = status
            if !idleChecked, elapsed > 2.2 {
                #expect(try server.me(idle).status == 401, "unused for longer than the idle timeout")
                idleChecked = true
            }
            server.advanceClock(by: 0.3)
        }
        #expect(idleChecked)
        #expect(lastActive == 401, "past the absolute lifetime even though in use")
        let sessions = try server.newSession(account)
        let list = try #require(try server.call("GET", "/users/me/sessions", token: sessions).json["sessions"]?.arrayValue)
        #expect(!list.contains { $0["id"] == nil })
        #expect(list.count == 1, "expired sessions are not listed")
    }
}
