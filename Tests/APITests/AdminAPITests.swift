import Accounts
import API
import Files
import FoundationEssentials
import Glibc
import JSON
import Synchronization
import TestSupport
import Testing

/// The administrators' API: accounts made on the command line, their sign-in and sessions,
/// authorization on every route, the user search with typed field filters and paging, disabling
/// (every session ends, on every instance), and the audit log.
@Suite(.serialized)
struct AdminAPITests {
    static let adminPassword = "console operator 1"

    static func signInAdmin(_ server: TestServer, email: String) throws -> String {
        let reply = try server.call("POST", "/admin/signin", json: #"{"email": "\#(email)", "password": "\#(adminPassword)"}"#)
        try #require(reply.status == 200, "\(reply.text)")
        #expect(reply.json["tokenType"] == "Bearer")
        #expect(reply.json["admin"]?["email"]?.stringValue?.lowercased() == email)
        #expect(reply.json["expiresAt"]?.stringValue != nil)
        return try #require(reply.json["accessToken"]?.stringValue)
    }

    static func get(_ server: TestServer, _ token: String, _ target: String) throws -> Reply {
        try server.send("GET", target, headers: [("Authorization", "Bearer \(token)")])
    }

    @Test func theCommandLineMakesAdministratorsWhoSignIn() throws {
        let server = try TestServer("admin_cli")
        defer { server.shutdown() }
        let binary = try #require(TestImages.exosphereExecutable())
        let create = try run(
            "/bin/sh",
            [
                "-c",
                "printf '%s\\n' '\(Self.adminPassword)' | \(binary) admin create --email Ops@Example.com --password-stdin --database-url '\(server.databaseURL)' --log-level warning",
            ])
        #expect(create.contains("admin created: Ops@Example.com"), "\(create)")
        let list = try run(binary, ["admin", "list", "--database-url", server.databaseURL, "--log-level", "warning"])
        #expect(list.contains("Ops@Example.com"), "\(list)")
        let token = try Self.signInAdmin(server, email: "ops@example.com")
        #expect(try Self.get(server, token, "/admin/users").status == 200)
        // A password reset ends the admin's sessions.
        _ = try run(
            "/bin/sh",
            [
                "-c",
                "printf '%s\\n' 'another operator 2' | \(binary) admin reset-password --email ops@example.com --password-stdin --database-url '\(server.databaseURL)' --log-level warning",
            ])
        #expect(try Self.get(server, token, "/admin/users").status == 401)
        _ = try run(binary, ["admin", "delete", "--email", "ops@example.com", "--database-url", server.databaseURL, "--log-level", "warning"])
        let refused = try server.call("POST", "/admin/signin", json: #"{"email": "ops@example.com", "password": "another operator 2"}"#)
        #expect(refused.status == 401)
        #expect(refused.json["code"] == "invalid_credentials")
    }

    @Test func everyAdminRouteNeedsAnAdminTokenAndNoUserRouteTakesOne() throws {
        let server = try TestServer("admin_authz")
        defer { server.shutdown() }
        _ = try server.app.accounts.createAdmin(email: "root@example.com", password: Self.adminPassword)
        let admin = try Self.signInAdmin(server, email: "root@example.com")
        let user = try server.register()
        let routes = ["/admin/users", "/admin/users/\(user.id)", "/admin/audit"]
        for route in routes {
            #expect(try server.send("GET", route).status == 401, "\(route) without a token")
            #expect(try Self.get(server, user.token, route).status == 401, "\(route) with a user's token")
            #expect(try Self.get(server, admin, route).status == 200, "\(route) with an admin's token")
        }
        #expect(
            try server.send(
                "PATCH", "/admin/users/\(user.id)", headers: [("Authorization", "Bearer \(user.token)"), ("Content-Type", "application/json")],
                body: Array(#"{"disabled":true}"#.utf8)
            ).status == 401)
        // An admin's token opens no user route.
        #expect(try Self.get(server, admin, "/users/me").status == 401)
        // Wrong passwords: 401, then 429 from the admin's own throttle.
        var statuses: [Int] = []
        for _ in 0..<12 {
            statuses.append(try server.call("POST", "/admin/signin", json: #"{"email": "root@example.com", "password": "wrong wrong wrong"}"#).status)
        }
        #expect(statuses.prefix(10).allSatisfy { $0 == 401 })
        #expect(statuses.last == 429)
    }

    @Test func searchByEmailAndTypedFieldsWithPaging() throws {
        let server = try TestServer("admin_search")
        defer { server.shutdown() }
        _ = try server.app.accounts.createAdmin(email: "root@example.com", password: Self.adminPassword)
        let admin = try Self.signInAdmin(server, email: "root@example.com")
        var ids: [String] = []
        for index in 0..<6 {
            let married = index % 2 == 0 ? "true" : "false"
            let account = try server.register(
                email: "person\(index)@search.example",
                extra:
                    #", "data": {"isMarried": \#(married), "weight": \#(70 + index), "height": \#(1.5 + Double(index) / 10), "dateOfBirth": "1994-05-1\#(index)", "city": "Bandung"}"#
            )
            ids.append(account.id)
        }
        _ = try server.register(email: "other@elsewhere.example")
        func found(_ query: String) throws -> [String] {
            let reply = try Self.get(server, admin, "/admin/users?" + query)
            try #require(reply.status == 200, "\(query): \(reply.text)")
            return reply.json["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        }
        #expect(try found("q=search.example").count == 6)
        #expect(try found("q=PERSON3") == [ids[3]])
        #expect(try found("q=%25").isEmpty)  // a literal %, not a wildcard
        #expect(try Set(found("field.isMarried=true")) == Set([ids[0], ids[2], ids[4]]))
        #expect(try found("field.weight=72") == [ids[2]])
        #expect(try found("field.height=1.8") == [ids[3]])
        #expect(try found("field.dateOfBirth=1994-05-15") == [ids[5]])
        #expect(try found("field.city=Bandung&field.isMarried=false&q=person1") == [ids[1]])
        for (query, code) in [
            ("field.weight=heavy", "invalid_type"), ("field.isMarried=yes", "invalid_type"), ("field.dateOfBirth=1994-13-01", "invalid_type"),
            ("field.shoeSize=42", "unknown_field"),
        ] {
            let reply = try Self.get(server, admin, "/admin/users?" + query)
            #expect(reply.status == 422, "\(query)")
            #expect(reply.json["code"]?.stringValue == code, "\(query): \(reply.text)")
        }
        // Newest first, one page at a time, each user once.
        var seen: [String] = []
        var next: String? = nil
        repeat {
            let reply = try Self.get(server, admin, "/admin/users?limit=2&q=search.example" + (next.map { "&after=" + $0 } ?? ""))
            seen += reply.json["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
            next = reply.json["next"]?.stringValue
        } while next != nil
        #expect(seen == ids.reversed())
        // The detail.
        let detail = try Self.get(server, admin, "/admin/users/\(ids[0])")
        #expect(detail.json["disabled"] == false)
        #expect(detail.json["sessionCount"] == 1)
        #expect(detail.json["imageCount"] == 0)
        #expect(detail.json["lastSignInAt"]?.stringValue != nil)
        #expect(detail.json["data"]?["weight"] == 70)
        #expect(try Self.get(server, admin, "/admin/users/\(UUID())").status == 404)
    }

    @Test func disablingEndsEverySessionOnEveryInstanceAndIsAudited() throws {
        let first = try TestServer("admin_disable1")
        defer { first.shutdown() }
        let second = try TestServer("admin_disable2", sharingDatabaseWith: first)
        defer { second.shutdown() }
        _ = try first.app.accounts.createAdmin(email: "root@example.com", password: Self.adminPassword)
        let admin = try Self.signInAdmin(first, email: "root@example.com")
        let user = try first.register()
        let patch = { (server: TestServer, body: String) in
            try server.send(
                "PATCH", "/admin/users/\(user.id)", headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
                body: Array(body.utf8))
        }
        #expect(try Self.get(second, user.token, "/users/me").status == 200)
        let disabled = try patch(second, #"{"disabled": true}"#)
        #expect(disabled.status == 200, "\(disabled.text)")
        #expect(disabled.json["disabled"] == true)
        #expect(disabled.json["sessionCount"] == 0)
        for server in [first, second] { #expect(try Self.get(server, user.token, "/users/me").status == 401) }
        let refused = try first.call("POST", "/users/signin", json: #"{"email": "\#(user.email)", "password": "\#(user.password)"}"#)
        #expect(refused.status == 403)
        #expect(refused.json["code"] == "account_disabled")
        #expect(try patch(first, #"{"disabled": false}"#).json["disabled"] == false)
        #expect(try first.call("POST", "/users/signin", json: #"{"email": "\#(user.email)", "password": "\#(user.password)"}"#).status == 200)
        #expect(try patch(first, #"{"disabled": "yes"}"#).status == 422)

        let audit = try Self.get(first, admin, "/admin/audit?limit=2")
        let entries = audit.json["entries"]?.arrayValue ?? []
        #expect(entries.map { $0["action"]?.stringValue } == ["user.enable", "user.disable"])
        #expect(entries.allSatisfy { $0["adminEmail"]?.stringValue == "root@example.com" && $0["targetUserId"]?.stringValue == user.id })
        #expect(entries.allSatisfy { $0["ipAddress"]?.stringValue == "127.0.0.1" })
        let rest = try Self.get(first, admin, "/admin/audit?limit=2&after=" + (audit.json["next"]?.stringValue ?? ""))
        #expect(rest.json["entries"]?.arrayValue?.map { $0["action"]?.stringValue } == ["admin.signin"])
        #expect(rest.json["next"] == .null)
    }

    @Test func sessionsResetMailImagesAndDeletionOfAUser() throws {
        let server = try TestServer("admin_user_ops")
        defer { server.shutdown() }
        _ = try server.app.accounts.createAdmin(email: "root@example.com", password: Self.adminPassword)
        let admin = try Self.signInAdmin(server, email: "root@example.com")
        let user = try server.register()
        let second = try server.call("POST", "/users/signin", json: #"{"email": "\#(user.email)", "password": "\#(user.password)"}"#)
        let secondToken = try #require(second.json["accessToken"]?.stringValue)
        let upload = try ImageScenarios.upload(server, user.token, "image/png", RealFiles.png3x2)
        #expect(upload.status == 201)
        let send = { (method: String, target: String) in
            try server.send(method, target, headers: [("Authorization", "Bearer \(admin)")])
        }

        let sessions = try send("GET", "/admin/users/\(user.id)/sessions").json["sessions"]?.arrayValue ?? []
        #expect(sessions.count == 2)
        let firstSession = try #require(sessions.first { $0["current"] == false }?["id"]?.stringValue)
        #expect(try send("DELETE", "/admin/users/\(user.id)/sessions/\(firstSession)").status == 204)
        #expect(try send("DELETE", "/admin/users/\(user.id)/sessions/\(firstSession)").status == 404)
        #expect(try send("GET", "/admin/users/\(user.id)/sessions").json["sessions"]?.arrayValue?.count == 1)
        #expect(try send("DELETE", "/admin/users/\(user.id)/sessions").status == 204)
        for token in [user.token, secondToken] {
            #expect(try server.send("GET", "/users/me", headers: [("Authorization", "Bearer \(token)")]).status == 401)
        }

        // The reset mail reaches the user's dev mailbox.
        let mailbox = "/tmp/exo-apitests-mail-admin_user_ops-\(getpid())"
        let before = Set((try? FileSystem.entries(of: mailbox)) ?? [])
        #expect(try send("POST", "/admin/users/\(user.id)/password-reset").status == 202)
        try waitUntil(timeout: .seconds(15), "the reset mail") {
            let names = Set((try? FileSystem.entries(of: mailbox)) ?? []).subtracting(before)
            return names.contains { name in
                name.hasSuffix(".eml") && ((try? FileReader.text(mailbox + "/" + name))?.contains("reset-password#token=") ?? false)
            }
        }

        let listed = try send("GET", "/admin/users/\(user.id)/images")
        #expect(listed.json["images"]?.arrayValue?.count == 1)
        #expect(listed.json["images"]?[0]?["signedUrl"]?.stringValue?.hasPrefix("/images/") == true)

        #expect(try send("DELETE", "/admin/users/\(user.id)").status == 204)
        #expect(try send("GET", "/admin/users/\(user.id)").status == 404)
        #expect(try send("DELETE", "/admin/users/\(user.id)").status == 404)
        #expect(try send("GET", "/admin/users/\(user.id)/images").status == 404)
        let actions = try send("GET", "/admin/audit?limit=10").json["entries"]?.arrayValue?.compactMap { $0["action"]?.stringValue } ?? []
        #expect(
            actions.prefix(5) == ["user.delete", "user.password_reset", "user.sessions.revoke_all", "user.session.revoke", "admin.signin"],
            "\(actions)")
    }
}
