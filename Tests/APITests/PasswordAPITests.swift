import TestSupport
import API
import FoundationEssentials
import Glibc
import JSON
import Postgres
import Cryptography
import Synchronization
import Testing

/// `POST /users/me/password` and `DELETE /users/me`.
@Suite(.testThreads, .liveServer("password"), .serialized)
struct PasswordAPITests {
    let server: TestServer

    init() throws { server = try #require(TestServer.current) }

    func change(_ token: String, old: String, new: String, confirm: String? = nil) throws -> Reply {
        server.remember(password: new)
        let confirmation = confirm.map { #", "confirmPassword": \#(jsonString($0))"# } ?? ""
        let reply = try server.call(
            "POST", "/users/me/password", token: token,
            json: #"{"oldPassword": \#(jsonString(old)), "newPassword": \#(jsonString(new))\#(confirmation)}"#)
        if let token = reply.json["accessToken"]?.stringValue { server.remember(token: token) }
        return reply
    }

    // MARK: - Changing the password

    @Test func changeRevokesTheOtherSessionsAndReplacesTheCallingOne() throws {
        let account = try server.register()
        let second = try server.newSession(account)
        let third = try server.newSession(account)
        let other = try server.register()
        let newPassword = server.uniquePassword("new")

        let reply = try change(second, old: account.password, new: newPassword, confirm: newPassword)
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json")
        #expect(reply.header("Cache-Control")?.contains("no-store") == true)
        #expect(keys(reply.json) == ["accessToken", "expiresAt", "revokedSessions", "tokenType", "user"])
        let revoked = try #require(reply.json["revokedSessions"]?.numberValue)
        #expect(revoked.isInteger && revoked.text == "2")
        let token = try #require(reply.json["accessToken"]?.stringValue)
        #expect(isBase64URLToken(token))
        #expect(reply.json["tokenType"] == "Bearer")
        #expect(reply.json["user"]?["id"]?.stringValue == account.id)
        #expect(epochMilliseconds(reply.json["expiresAt"]?.stringValue ?? "") != nil)

        for old in [account.token, second, third] { #expect(try server.me(old).status == 401) }
        #expect(try server.me(token).status == 200)
        #expect(try server.me(other.token).status == 200)
        let sessions = try #require(try server.call("GET", "/users/me/sessions", token: token).json["sessions"]?.arrayValue)
        #expect(sessions.count == 1)
        #expect(sessions.first?["current"] == .bool(true))
        #expect(try server.signIn(account.email, account.password).status == 401)
        #expect(try server.signIn(account.email, newPassword).status == 200)
        // The stored hash changed and is still a scrypt PHC string.
        let hash = try server.withDatabase {
            try $0.query("SELECT password_hash FROM users WHERE id = \(UUID(uuidString: account.id)!)")[0].decode(String.self, at: 0)
        }
        #expect(hash.hasPrefix("$scrypt$"))
    }

    @Test func aSoleSessionRevokesNothing() throws {
        let account = try server.register()
        let reply = try change(account.token, old: account.password, new: server.uniquePassword())
        #expect(reply.status == 200)
        #expect(reply.json["revokedSessions"] == 0)
    }

    @Test func wrongOldPasswordIs403AndChangesNothing() throws {
        let account = try server.register()
        let second = try server.newSession(account)
        let reply = try change(account.token, old: server.uniquePassword("wrong"), new: server.uniquePassword())
        #expect(reply.status == 403)
        #expect(reply.code == "invalid_password")
        #expect(reply.header("Content-Type") == "application/problem+json")
        #expect(try server.me(account.token).status == 200)
        #expect(try server.me(second).status == 200)
        #expect(try server.signIn(account.email, account.password).status == 200)
    }

    @Test func policyFailures() throws {
        let account = try server.register()
        let unchanged = try change(account.token, old: account.password, new: account.password)
        #expect(unchanged.status == 422)
        #expect(unchanged.code == "password_unchanged")

        let new = server.uniquePassword()
        let mismatch = try change(account.token, old: account.password, new: new, confirm: new + "x")
        #expect(mismatch.status == 422)
        #expect(mismatch.code == "password_mismatch")
        #expect(mismatch.firstError.field == "confirmPassword")

        for weak in ["Sh0rt!x", String(repeating: "w", count: 1025)] {
            let reply = try change(account.token, old: account.password, new: weak)
            #expect(reply.status == 422)
            #expect(reply.code == "weak_password")
            #expect(reply.firstError.field == "newPassword")
        }
        let missing = try server.call("POST", "/users/me/password", token: account.token, json: #"{"oldPassword": "\#(account.password)"}"#)
        #expect(missing.status == 422)
        #expect(missing.firstError.field == "newPassword")
        let unknown = try server.call(
            "POST", "/users/me/password", token: account.token,
            json: #"{"oldPassword": "\#(account.password)", "newPassword": "\#(new)", "password": "x"}"#)
        #expect(unknown.status == 422)
        // Nothing of it changed the password or ended the session, and none counted as a wrong password.
        #expect(try server.me(account.token).status == 200)
        #expect(try server.signIn(account.email, account.password).status == 200)
        let counted = try server.withDatabase {
            try $0.query("SELECT coalesce(sum(failures), 0)::int8 FROM auth_throttles WHERE key LIKE \("%" + account.id.lowercased())")[0]
                .decode(Int64.self, at: 0)
        }
        #expect(counted == 0)
    }

    @Test func fiveWrongOldPasswordsLockTheEndpoint() throws {
        let account = try server.register()
        let bystander = try server.register()
        for attempt in 1...5 {
            let reply = try change(account.token, old: server.uniquePassword("wrong"), new: server.uniquePassword())
            #expect(reply.status == 403, "attempt \(attempt)")
        }
        for old in [account.password, server.uniquePassword("wrong"), account.password] {
            let reply = try change(account.token, old: old, new: server.uniquePassword())
            #expect(reply.status == 429)
            #expect(reply.code == "too_many_attempts")
            let retry = try #require(reply.header("Retry-After").flatMap { Int($0) })
            #expect(retry > 800 && retry <= 900, "until 15 minutes after the first failure (\(retry))")
        }
        // Deleting the account with the right password is locked too.
        let delete = try server.call("DELETE", "/users/me", token: account.token, json: #"{"password": "\#(account.password)"}"#)
        #expect(delete.status == 429)
        // The password did not change; the session and sign-in work; another user is not locked.
        #expect(try server.me(account.token).status == 200)
        #expect(try server.signIn(account.email, account.password).status == 200)
        #expect(try change(bystander.token, old: bystander.password, new: server.uniquePassword()).status == 200)
    }

    /// Each change mails the account's address a notice: a token can change the password (and
    /// mail its owner) at most 10 times an hour, then `429`, even with the right password.
    @Test func tenChangesAnHourThenTheChangesAreRefused() throws {
        var account = try server.register()
        for change in 1...10 {
            let next = server.uniquePassword("change\(change)")
            let reply = try self.change(account.token, old: account.password, new: next)
            try #require(reply.status == 200, "change \(change): \(reply.text)")
            account.password = next
            account.token = try #require(reply.json["accessToken"]?.stringValue)
        }
        let refused = try change(account.token, old: account.password, new: server.uniquePassword("eleventh"))
        #expect(refused.status == 429 && refused.code == "too_many_attempts", "\(refused.text)")
        #expect(refused.text.contains("changed too often"), "\(refused.text)")
        #expect(try server.signIn(account.email, account.password).status == 200, "the tenth password stays")
        let changes = try server.withDatabase {
            try $0.query("SELECT count(*)::int8 FROM security_events WHERE user_id = \(account.id)::uuid AND type = 'password_changed'")[0]
                .decode(Int.self, at: 0)
        }
        #expect(changes == 10)
    }

    @Test func concurrentChangesWithTheSameOldPasswordCannotBothSucceed() throws {
        let server = self.server
        for round in 0..<4 {
            let account = try server.register()
            let tokens = [account.token, try server.newSession(account)]
            let passwords = [server.uniquePassword("a\(round)"), server.uniquePassword("b\(round)")]
            let statuses = Mutex<[Int]>([0, 0])
            let barrier = Barrier(2)
            try onThreads(2) { index in
                try barrier.arrive()
                let body = #"{"oldPassword": "\#(account.password)", "newPassword": "\#(passwords[index])"}"#
                let reply = try? server.call("POST", "/users/me/password", token: tokens[index], json: body)
                if let token = reply?.json["accessToken"]?.stringValue { server.remember(token: token) }
                statuses.withLock { $0[index] = reply?.status ?? -1 }
            }
            let results = statuses.withLock { $0 }
            #expect(results.filter { $0 == 200 }.count == 1, "round \(round): \(results)")
            #expect(results.allSatisfy { [200, 401, 403].contains($0) }, "round \(round): \(results)")
            let signIns = try passwords.map { try server.signIn(account.email, $0).status }
            #expect(signIns.filter { $0 == 200 }.count == 1, "exactly one new password is in force: \(signIns)")
            #expect(try server.signIn(account.email, account.password).status == 401)
        }
    }

    @Test func aHashWithOtherParametersIsUpgradedAtSignIn() throws {
        let account = try server.register()
        let uuid = try #require(UUID(uuidString: account.id))
        let weak = try PasswordHasher(parameters: ScryptParameters(logN: 10, r: 1, p: 1), allowWeakParameters: true)
        let old = try weak.hash(password: account.password)
        try server.withDatabase { _ = try $0.execute("UPDATE users SET password_hash = \(old) WHERE id = \(uuid)") }
        #expect(try server.signIn(account.email, server.uniquePassword("wrong")).status == 401)
        #expect(
            try server.withDatabase { try $0.query("SELECT password_hash FROM users WHERE id = \(uuid)")[0].decode(String.self, at: 0) } == old,
            "a failed sign-in upgrades nothing")
        #expect(try server.signIn(account.email, account.password).status == 200)
        let upgraded = try server.withDatabase { try $0.query("SELECT password_hash FROM users WHERE id = \(uuid)")[0].decode(String.self, at: 0) }
        #expect(upgraded != old)
        #expect(upgraded.hasPrefix("$scrypt$ln=10,r=8,p=1$"), "the configured parameters")
        #expect(try server.signIn(account.email, account.password).status == 200)
    }

    // MARK: - Deleting the account

    @Test func deleteAccountNeedsThePassword() throws {
        let account = try server.register(extra: #", "data": {"delNote": "bye"}"#)
        let second = try server.newSession(account)
        let wrong = try server.call("DELETE", "/users/me", token: account.token, json: #"{"password": "\#(server.uniquePassword("wrong"))"}"#)
        #expect(wrong.status == 403)
        #expect(wrong.code == "invalid_password")
        #expect(try server.me(account.token).status == 200)
        let missing = try server.call("DELETE", "/users/me", token: account.token, json: "{}")
        #expect(missing.status == 422)
        // No body is an account without a password's deletion: this one has one.
        let noBody = try server.call("DELETE", "/users/me", token: account.token)
        #expect(noBody.status == 422, "\(noBody.status) \(noBody.text.prefix(200))")
        #expect(noBody.code == "invalid_value")
        #expect(try server.me(account.token).status == 200)

        let deleted = try server.call("DELETE", "/users/me", token: account.token, json: #"{"password": "\#(account.password)"}"#)
        #expect(deleted.status == 204)
        #expect(deleted.body.isEmpty)
        #expect(try server.me(account.token).status == 401)
        #expect(try server.me(second).status == 401)
        #expect(try server.signIn(account.email, account.password).status == 401)
        let uuid = try #require(UUID(uuidString: account.id))
        let rows = try server.withDatabase { db in
            (
                try db.query("SELECT count(*) FROM users WHERE id = \(uuid)")[0].decode(Int64.self, at: 0),
                try db.query("SELECT count(*) FROM sessions WHERE user_id = \(uuid)")[0].decode(Int64.self, at: 0)
            )
        }
        #expect(rows.0 == 0 && rows.1 == 0)
        // The address is free again, for a new user with a new id.
        let again = try server.register(email: account.email)
        #expect(again.id != account.id)
        #expect(again.user["data"] == .object(JSONObject()))
    }
}
