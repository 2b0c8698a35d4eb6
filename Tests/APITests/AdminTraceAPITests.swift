import API
import Dispatch
import Foundation
import JSON
import Postgres
import Synchronization
import TestSupport
import Testing

/// What administrators leave behind (`../shared/API.md`, "Sign-in routes, signed URLs, uploads"):
/// in the user's activity, their doing without their address or device; in the audit log, their
/// reads of a user's data and their failed sign-ins. And a failed sign-in's answer, which must not
/// wait for its activity row (equal work for a known and an unknown email).
@Suite(.testThreads, .serialized)
struct AdminTraceAPITests {
    static func activity(_ server: TestServer, _ token: String) throws -> [JSONValue] {
        let reply = try server.call("GET", "/users/me/activity?limit=100", token: token)
        try #require(reply.status == 200, "\(reply.text)")
        return reply.json["events"]?.arrayValue ?? []
    }

    static func auditActions(_ server: TestServer, _ admin: String, limit: Int) throws -> [(action: String, target: String?)] {
        let entries = try AdminAPITests.get(server, admin, "/admin/audit?limit=\(limit)").json["entries"]?.arrayValue ?? []
        return entries.map { ($0["action"]?.stringValue ?? "", $0["targetUserId"]?.stringValue) }
    }

    @Test func anAdministratorsDoingsShowInTheActivityWithoutTheOperatorsAddressOrDevice() throws {
        let server = try TestServer("admin_trace")
        defer { server.shutdown() }
        let admin = try AdminAPITests.rootAdmin(server)
        let user = try server.register()
        let ended = try server.newSession(user, userAgent: "UsersPhone/1.0")
        let headers = [("Authorization", "Bearer \(admin)"), ("User-Agent", "OperatorsLaptop/9.9")]
        #expect(try server.send("DELETE", "/admin/users/\(user.id)/sessions", headers: headers).status == 204)
        #expect(try server.me(ended).status == 401)
        let moved = server.uniqueEmail("moved-by-admin")
        let edited = try server.send(
            "PATCH", "/admin/users/\(user.id)", headers: headers + [("Content-Type", "application/json")],
            body: Array(#"{"email": "\#(moved)"}"#.utf8))
        #expect(edited.status == 200, "\(edited.text)")

        let token = try server.signIn(moved, user.password).json["accessToken"]?.stringValue ?? ""
        server.remember(token: token)
        let events = try Self.activity(server, token)
        let byAdministrator = events.filter { $0["by"]?.stringValue == "administrator" }
        #expect(Set(byAdministrator.compactMap { $0["type"]?.stringValue }) == ["session_revoked", "email_changed"], "\(events)")
        for event in byAdministrator {
            #expect(event["ipAddress"] == .null, "\(event)")
            #expect(event["userAgent"] == .null, "\(event)")
        }
        // The user's own events keep theirs.
        let own = try #require(events.first { $0["type"]?.stringValue == "signed_in" })
        #expect(own["by"]?.stringValue == "user")
        #expect(own["ipAddress"]?.stringValue == "127.0.0.1")
        #expect(!events.contains { $0["userAgent"]?.stringValue?.contains("Operator") == true })
    }

    @Test func readsOfAUsersDataAndFailedSignInsAreAudited() throws {
        let server = try TestServer("admin_reads")
        defer { server.shutdown() }
        let admin = try AdminAPITests.rootAdmin(server)
        let user = try server.register()
        let uploaded = try ImageScenarios.upload(server, user.token, "image/png", RealFiles.png3x2)
        let image = try #require(uploaded.json["id"]?.stringValue)
        let reads: [(path: String, action: String)] = [
            ("/admin/users?q=\(user.email)", "users.search"),
            ("/admin/users/\(user.id)", "user.read"),
            ("/admin/users/\(user.id)/sessions", "user.sessions.read"),
            ("/admin/users/\(user.id)/activity", "user.activity.read"),
            ("/admin/users/\(user.id)/images", "user.images.read"),
            ("/admin/users/\(user.id)/images/\(image)", "user.image.read"),
        ]
        for read in reads {
            #expect(try AdminAPITests.get(server, admin, read.path).status == 200, "\(read.path)")
        }
        let audited = try Self.auditActions(server, admin, limit: reads.count)
        #expect(audited.map(\.action) == reads.reversed().map(\.action))
        #expect(audited.filter { $0.action != "users.search" }.allSatisfy { $0.target == user.id }, "\(audited)")
        // Every admin route writes its entry: reading the audit log, the schema and the dashboard
        // too (the entry of a read of the audit log comes after the page it answers).
        for path in ["/admin/audit", "/admin/schema", "/admin/stats"] { _ = try AdminAPITests.get(server, admin, path) }
        #expect(try Self.auditActions(server, admin, limit: 4).map(\.action) == ["stats.read", "schema.read", "audit.read", "audit.read"])

        // Failed sign-ins, of a known administrator and of an unknown email, with the email as typed.
        for email in ["root@example.com", "nobody@example.com"] {
            let refused = try server.call("POST", "/admin/signin", json: #"{"email": "\#(email)", "password": "wrong wrong wrong"}"#)
            #expect(refused.status == 401)
        }
        let entries = try AdminAPITests.get(server, admin, "/admin/audit?limit=2").json["entries"]?.arrayValue ?? []
        #expect(entries.map { $0["action"]?.stringValue } == ["admin.signin_failed", "admin.signin_failed"])
        #expect(entries.map { $0["adminEmail"]?.stringValue } == ["nobody@example.com", "root@example.com"])
    }

    /// While `security_events` takes no row (a lock the test holds), a wrong password for a known
    /// email is still answered: its activity row is written after the answer, so that a known
    /// email's refusal comes after the same work as an unknown one's. Once the lock goes, the row
    /// comes.
    @Test func aFailedSignInIsAnsweredBeforeItsActivityIsWritten() throws {
        let server = try TestServer("signin_equal_work")
        defer { server.shutdown() }
        let user = try server.register()
        let blocker = try PostgresConnection(connectionString: server.databaseURL)
        defer { blocker.close() }
        try blocker.execute("BEGIN")
        try blocker.execute("LOCK TABLE security_events IN SHARE ROW EXCLUSIVE MODE")
        let answered = DispatchSemaphore(value: 0)
        let status = Mutex<Int?>(nil)
        let attempt = Thread {
            let reply = try? server.signIn(user.email, "a wrong password 1")
            status.withLock { $0 = reply?.status }
            answered.signal()
        }
        attempt.start()
        let inTime = answered.wait(timeout: .now() + 5) == .success
        try blocker.execute("COMMIT")
        if !inTime { _ = answered.wait(timeout: .now() + 30) }
        #expect(inTime, "the refusal waited for its activity row")
        #expect(status.withLock { $0 } == 401)
        let token = try server.newSession(user)
        try waitUntil(timeout: .seconds(10), "the failed sign-in's activity row") {
            try Self.activity(server, token).contains { $0["type"]?.stringValue == "sign_in_failed" }
        }
    }
}
