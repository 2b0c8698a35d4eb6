import Accounts
import API
import Cryptography
import Files
import FoundationEssentials
import Glibc
import JSON
import Postgres
import Synchronization
import TestSupport
import Testing

/// The administrators' API: accounts made on the command line, their sign-in and sessions,
/// authorization on every route, the user search with typed field filters and paging, disabling
/// (every session ends, on every instance), and the audit log.
@Suite(.testThreads, .serialized)
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

    /// Creates root@example.com and signs in as it.
    static func rootAdmin(_ server: TestServer) throws -> String {
        _ = try server.app.accounts.administrators.createAdmin(email: "root@example.com", password: adminPassword)
        return try signInAdmin(server, email: "root@example.com")
    }

    /// The actions of an audit page that changed something (reads of a user's data left out:
    /// `AdminTraceAPITests` covers those).
    static func changes(_ page: Reply) -> [String] {
        (page.json["entries"]?.arrayValue ?? []).compactMap { $0["action"]?.stringValue }.filter {
            !$0.hasSuffix(".read") && $0 != "users.search"
        }
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
        // An administrator without a second factor: reset-mfa says so.
        #expect(throws: TestFailure.self) {
            try run(binary, ["admin", "reset-mfa", "--email", "ops@example.com", "--database-url", server.databaseURL, "--log-level", "warning"])
        }
        _ = try run(binary, ["admin", "delete", "--email", "ops@example.com", "--database-url", server.databaseURL, "--log-level", "warning"])
        let refused = try server.call("POST", "/admin/signin", json: #"{"email": "ops@example.com", "password": "another operator 2"}"#)
        #expect(refused.status == 401)
        // Each command is in the audit log, by the operating-system user who ran it.
        let commands = try server.withDatabase { connection in
            try connection.query("SELECT admin_email, action FROM admin_audit WHERE action LIKE 'cli.%' ORDER BY id").map {
                [try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)]
            }
        }
        #expect(
            commands.map { $0[1] } == [
                "cli.admin.create Ops@Example.com", "cli.admin.list", "cli.admin.reset_password ops@example.com", "cli.admin.delete ops@example.com",
            ], "\(commands)")
        #expect(commands.allSatisfy { $0[0].hasPrefix("command line (") }, "\(commands)")
        #expect(refused.json["code"] == "invalid_credentials")
    }

    @Test func everyAdminRouteNeedsAnAdminTokenAndNoUserRouteTakesOne() throws {
        let server = try TestServer("admin_authz")
        defer { server.shutdown() }
        _ = try Self.rootAdmin(server)
        let user = try server.register()
        let image = try #require(try ImageScenarios.upload(server, user.token, "image/png", RealFiles.png3x2).json["id"]?.stringValue)
        // Admin tokens that no longer open anything: past their end, idle over an hour, of a deleted
        // admin. Their hours pass on the server's clock. The first, used every 59 minutes, never
        // idles, and ends 12 hours after its sign-in all the same; the second, signed in at 10 h
        // 49 min, is unused for 72 minutes by then.
        let expired = try Self.signInAdmin(server, email: "root@example.com")
        var idle = ""
        for step in 1...12 {
            server.advanceClock(by: 59 * 60)
            #expect(try Self.get(server, expired, "/admin/stats").status == 200, "in use at \(step * 59) minutes")
            if step == 11 { idle = try Self.signInAdmin(server, email: "root@example.com") }
        }
        server.advanceClock(by: 13 * 60)
        let admin = try Self.signInAdmin(server, email: "root@example.com")
        _ = try server.app.accounts.administrators.createAdmin(email: "gone@example.com", password: Self.adminPassword)
        let deleted = try Self.signInAdmin(server, email: "gone@example.com")
        #expect(try server.app.accounts.administrators.deleteAdmin(email: "gone@example.com"))
        let routes: [(String, String)] = [
            ("GET", "/admin/users"), ("GET", "/admin/users/\(user.id)"), ("PATCH", "/admin/users/\(user.id)"),
            ("GET", "/admin/users/\(user.id)/sessions"), ("DELETE", "/admin/users/\(user.id)/sessions/\(UUID())"),
            ("DELETE", "/admin/users/\(user.id)/sessions"), ("POST", "/admin/users/\(user.id)/password-reset"),
            ("GET", "/admin/users/\(user.id)/images"), ("GET", "/admin/users/\(user.id)/images/\(image)"),
            ("GET", "/admin/users/\(user.id)/images/\(image)/thumbnail"), ("GET", "/admin/users/\(user.id)/activity"),
            ("GET", "/admin/schema"), ("PUT", "/admin/schema/weight"), ("GET", "/admin/stats"), ("GET", "/admin/audit"),
            ("DELETE", "/admin/users/\(user.id)"),
        ]
        let body = Array(#"{"type": "integer"}"#.utf8)
        for (method, route) in routes {
            let send = { (token: String?) in
                try server.send(
                    method, route, headers: (token.map { [("Authorization", "Bearer \($0)")] } ?? []) + [("Content-Type", "application/json")],
                    body: body)
            }
            for (token, what): (String?, String) in [
                (nil, "no token"), (user.token, "a user's token"), (expired, "an expired admin token"), (idle, "an idle admin token"),
                (deleted, "a deleted admin's token"),
            ] {
                let reply = try send(token)
                #expect(reply.status == 401, "\(method) \(route) with \(what): \(reply.status)")
                #expect(reply.json["code"] == (token == nil ? "missing_token" : "invalid_token"), "\(method) \(route) with \(what)")
            }
        }
        for route in [
            "/admin/users", "/admin/users/\(user.id)", "/admin/users/\(user.id)/images/\(image)", "/admin/schema", "/admin/stats", "/admin/audit",
        ] {
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
        let admin = try Self.rootAdmin(server)
        var ids: [String] = []
        for index in 0..<6 {
            let married = index % 2 == 0 ? "true" : "false"
            let account = try server.register(
                email: "person\(index)@search.example",
                extra:
                    #", "data": {"isMarried": \#(married), "weight": \#(70 + index), "height": \#(1.5 + Double(index) / 10), "dateOfBirth": "1994-05-1\#(index)", "city": "Bandung", "lastVisit": "2026-11-0\#(index + 1)T08:30:00Z"}"#
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
        #expect(try found("field.lastVisit=2026-11-03T08:30:00Z") == [ids[2]])
        #expect(try found("field.city=Bandung&field.isMarried=false&q=person1") == [ids[1]])
        for (query, code) in [
            ("field.weight=heavy", "invalid_type"), ("field.isMarried=yes", "invalid_type"), ("field.dateOfBirth=1994-13-01", "invalid_type"),
            ("field.lastVisit=yesterday", "invalid_type"),
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
        // Every list names a bad page the same way, this one too.
        for (query, code) in [("after=nope", "invalid_cursor"), ("limit=0", "invalid_limit")] {
            let refused = try Self.get(server, admin, "/admin/users?" + query)
            #expect(refused.status == 422 && refused.json["code"]?.stringValue == code, "\(query): \(refused.text)")
        }
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
        let admin = try Self.rootAdmin(first)
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
        let admin = try Self.rootAdmin(server)
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
        let actions = Self.changes(try send("GET", "/admin/audit?limit=20"))
        #expect(
            actions.prefix(5) == ["user.delete", "user.password_reset", "user.sessions.revoke_all", "user.session.revoke", "admin.signin"],
            "\(actions)")
    }

    @Test func profileEditsByTheUsersRulesAuditedWithTheirWrite() throws {
        let server = try TestServer("admin_edit")
        defer { server.shutdown() }
        let admin = try Self.rootAdmin(server)
        let user = try server.register(extra: #", "data": {"dateOfBirth": "1990-01-01", "weight": 80}"#)
        let patch = { (body: String, headers: [(String, String)]) in
            try server.send(
                "PATCH", "/admin/users/\(user.id)",
                headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/merge-patch+json")] + headers, body: Array(body.utf8))
        }
        let before = try Self.get(server, admin, "/admin/users/\(user.id)")
        let etag = try #require(before.header("ETag"))
        let edited = try patch(
            #"{"firstname": "Siti", "data": {"dateOfBirth": "1994-05-17", "weight": null}, "sessionCount": 9}"#, [("If-Match", etag)])
        #expect(edited.status == 200, "\(edited.text)")
        #expect(edited.json["firstname"] == "Siti")
        #expect(edited.json["data"]?["dateOfBirth"] == "1994-05-17")
        #expect(edited.json["data"]?["weight"] == nil)
        #expect(edited.json["sessionCount"] == 1)
        // The user sees it; the stale tag, a mistyped value and an unknown key change nothing.
        let mine = try Self.get(server, user.token, "/users/me")
        #expect(mine.json["data"]?["dateOfBirth"] == "1994-05-17")
        #expect(try patch(#"{"lastname": "X"}"#, [("If-Match", etag)]).status == 412)
        let mistyped = try patch(#"{"data": {"dateOfBirth": "17 May 1994"}, "disabled": true}"#, [])
        #expect(mistyped.status == 422)
        #expect(mistyped.json["code"] == "invalid_type")
        #expect(try patch(#"{"password": "x"}"#, []).status == 422)
        let after = try Self.get(server, admin, "/admin/users/\(user.id)")
        #expect(after.json["disabled"] == false)
        #expect(after.json["lastname"] == mine.json["lastname"])
        #expect(try patch(#"{"firstname": "Siti"}"#, []).status == 200)
        let actions = Self.changes(try Self.get(server, admin, "/admin/audit?limit=20"))
        #expect(actions.prefix(3) == ["user.update", "user.update", "admin.signin"], "\(actions)")
        #expect(try patch(#"{"firstname": "Nobody"}"#, []).status == 200)
        let missing = try server.send(
            "PATCH", "/admin/users/\(UUID())", headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
            body: Array(#"{"firstname": "Nobody"}"#.utf8))
        #expect(missing.status == 404)

        // The activity, the dashboard's figures, an image and its thumbnail.
        #expect(try server.call("POST", "/users/signin", json: #"{"email": "\#(user.email)", "password": "\#(user.password)"}"#).status == 200)
        let activity = try Self.get(server, admin, "/admin/users/\(user.id)/activity")
        #expect(activity.json["events"]?.arrayValue?.contains { $0["type"] == "signed_in" } == true, "\(activity.text)")
        let stats = try Self.get(server, admin, "/admin/stats")
        #expect(stats.json["users"] == 1)
        #expect(stats.json["disabledUsers"] == 0)
        #expect(stats.json["activeSessions"] == 2)
        let days = stats.json["days"]?.arrayValue ?? []
        #expect(days.count == 30)
        #expect(days.last?["signUps"] == 1)
        #expect(days.last?["signIns"] == 1)
        #expect(days.dropLast().allSatisfy { $0["signUps"] == 0 })
        let image = try #require(try ImageScenarios.upload(server, user.token, "image/png", RealFiles.png3x2).json["id"]?.stringValue)
        let bytes = try Self.get(server, admin, "/admin/users/\(user.id)/images/\(image)")
        #expect(bytes.status == 200)
        #expect(bytes.body == RealFiles.png3x2)
        let thumbnail = try server.send(
            "GET", "/admin/users/\(user.id)/images/\(image)/thumbnail?size=128",
            headers: [("Authorization", "Bearer \(admin)"), ("Accept", "image/webp")])
        #expect(thumbnail.status == 200)
        #expect(thumbnail.header("Content-Type") == "image/webp")
        // Another user's image is not this user's.
        let other = try server.register()
        #expect(try Self.get(server, admin, "/admin/users/\(other.id)/images/\(image)").status == 404)
    }

    @Test func pinningATypeConvertsStoredValuesOrIsRefusedAndReachesEveryInstance() throws {
        let first = try TestServer("admin_schema1")
        defer { first.shutdown() }
        let second = try TestServer("admin_schema2", sharingDatabaseWith: first)
        defer { second.shutdown() }
        let admin = try Self.rootAdmin(first)
        let put = { (field: String, body: String) in
            try first.send(
                "PUT", "/admin/schema/\(field)", headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
                body: Array(body.utf8))
        }
        let users = try (0..<3).map { index in
            try first.register(extra: #", "data": {"score": \#(index * 10), "isMarried": true, "note": "1994-05-1\#(index)"}"#)
        }
        // Second instance caches the types by writing them.
        for user in users {
            #expect(try second.call("PATCH", "/users/me", token: user.token, json: #"{"data": {"score": 5}}"#).status == 200)
        }
        let schema = try Self.get(first, admin, "/admin/schema")
        #expect(schema.json["fields"]?["score"]?["type"] == "integer")
        #expect(schema.json["fields"]?["score"]?["pinned"] == false)

        // Booleans are not integers: refused, nothing changes.
        let conflict = try put("isMarried", #"{"type": "integer"}"#)
        #expect(conflict.status == 409, "\(conflict.text)")
        #expect(conflict.json["code"] == "schema_conflict")
        #expect(try Self.get(first, admin, "/admin/schema").json["fields"]?["isMarried"]?["type"] == "boolean")
        // Strings that are dates become a date field; integers become doubles.
        #expect(try put("note", #"{"type": "date"}"#).json["type"] == "date")
        let pinned = try put("score", #"{"type": "double"}"#)
        #expect(pinned.status == 200, "\(pinned.text)")
        #expect(pinned.json["pinned"] == true)
        #expect(try put("newField", #"{"type": "boolean"}"#).status == 200)
        #expect(try put("bad-name", #"{"type": "boolean"}"#).status == 422)
        #expect(try put("other", #"{"type": "uuid"}"#).status == 422)
        // Every instance takes the new type within its refresh interval (the second one had cached score as integer).
        try waitUntil(timeout: .seconds(10), "the second instance to read the new type") {
            try second.call("PATCH", "/users/me", token: users[0].token, json: #"{"data": {"score": 7.5}}"#).status == 200
        }
        #expect(try second.call("PATCH", "/users/me", token: users[0].token, json: #"{"data": {"note": "not a date"}}"#).status == 422)
        #expect(try Self.get(second, users[1].token, "/users/me").json["data"]?["score"] == 5.0)
        #expect(try second.call("PATCH", "/users/me", token: users[0].token, json: #"{"data": {"newField": "x"}}"#).status == 422)
        let search = try Self.get(first, admin, "/admin/users?field.note=1994-05-11")
        #expect(search.json["users"]?.arrayValue?.map { $0["id"]?.stringValue } == [users[1].id])
        let actions = Array(Self.changes(try Self.get(first, admin, "/admin/audit?limit=20")).prefix(3))
        #expect(actions == ["schema.pin:newField:boolean", "schema.pin:score:double", "schema.pin:note:date"], "\(actions)")
    }

    @Test func adminGuessesSentAtOnceFromTwoInstancesAreVerifiedAtMostUpToTheLimit() throws {
        let first = try TestServer("admin_guess1")
        defer { first.shutdown() }
        let second = try TestServer("admin_guess2", sharingDatabaseWith: first)
        defer { second.shutdown() }
        _ = try first.app.accounts.administrators.createAdmin(email: "root@example.com", password: Self.adminPassword)
        let limit = first.app.accounts.configuration.signInPerEmailAndAddress.limit
        let barrier = Barrier(30)
        let statuses = Mutex<[Int]>([])
        try onThreads(30) { index in
            try barrier.arrive()
            let server = index % 2 == 0 ? first : second
            let reply = try? server.call("POST", "/admin/signin", json: #"{"email": "root@example.com", "password": "guess \#(index) wrong"}"#)
            statuses.withLock { $0.append(reply?.status ?? -1) }
        }
        let counts = tally(statuses.withLock { $0 })
        #expect(counts == [401: limit, 429: 30 - limit], "30 parallel admin guesses with a limit of \(limit): \(counts)")
        // Locked, even with the right password; the users' sign-in is another throttle.
        #expect(try first.call("POST", "/admin/signin", json: #"{"email": "root@example.com", "password": "\#(Self.adminPassword)"}"#).status == 429)
    }

    /// Admin sign-in has the users' throttles: an address that guessed wrong exhausts its own
    /// tries and the administrator, from elsewhere, still signs in; one address posting random
    /// emails (a full hash each) meets a limit of its own, which is not the owner's.
    @Test func oneAddressCannotLockAnAdministratorOutNorGuessWithoutALimit() throws {
        let server = try TestServer("admin_owner_rule") { configuration in
            configuration.trustedProxies = ["127.0.0.1"]
            configuration.accounts.signInPerEmailAndAddress = ThrottleRule(limit: 3, windowSeconds: 900)
            configuration.accounts.signInPerEmail = ThrottleRule(limit: 20, windowSeconds: 900)
            configuration.accounts.signInPerAddress = ThrottleRule(limit: 6, windowSeconds: 900)
        }
        defer { server.shutdown() }
        _ = try server.app.accounts.administrators.createAdmin(email: "root@example.com", password: Self.adminPassword)
        func signIn(_ email: String, _ password: String, from address: String) throws -> Int {
            try server.call(
                "POST", "/admin/signin", json: #"{"email": "\#(email)", "password": "\#(password)"}"#, headers: [("X-Forwarded-For", address)]
            ).status
        }
        for _ in 0..<3 { #expect(try signIn("root@example.com", "a wrong guess", from: "198.51.100.7") == 401) }
        #expect(try signIn("root@example.com", Self.adminPassword, from: "198.51.100.7") == 429)
        #expect(try signIn("root@example.com", Self.adminPassword, from: "192.0.2.10") == 200, "the owner, elsewhere")
        #expect(try signIn("root@example.com", Self.adminPassword, from: "198.51.100.7") == 429, "the owner's success unlocks no one else")
        let random = try (0..<8).map { try signIn("random\($0)@example.com", "a guess", from: "203.0.113.9") }
        #expect(random == Array(repeating: 401, count: 6) + [429, 429], "\(random)")
        #expect(try signIn("root@example.com", Self.adminPassword, from: "192.0.2.10") == 200)
    }

    /// Strangers' guesses from many addresses fill the per-email counter and are slowed by it, but
    /// cannot lock the administrator out: a sign-in from an address, or with the device cookie, that
    /// signed in as the email before is not held by that counter. The device's token is kept only
    /// as a hash, and its cookie goes to the sign-in alone.
    @Test func strangersFromManyAddressesCannotLockAnAdministratorOut() throws {
        let server = try TestServer("admin_known_clients") { configuration in
            configuration.trustedProxies = ["127.0.0.1"]
            configuration.accounts.signInPerEmailAndAddress = ThrottleRule(limit: 3, windowSeconds: 900)
            configuration.accounts.signInPerEmail = ThrottleRule(limit: 10, windowSeconds: 900)
        }
        defer { server.shutdown() }
        _ = try server.app.accounts.administrators.createAdmin(email: "root@example.com", password: Self.adminPassword)
        @Sendable func signIn(_ password: String, from address: String, cookie: String? = nil) throws -> Reply {
            var headers = [("X-Forwarded-For", address)]
            if let cookie { headers.append(("Cookie", "theme=dark; exo_admin_device=\(cookie)")) }
            return try server.call(
                "POST", "/admin/signin", json: #"{"email": "root@example.com", "password": "\#(password)"}"#, headers: headers)
        }
        let first = try signIn(Self.adminPassword, from: "192.0.2.10")
        #expect(first.status == 200)
        let setCookie = try #require(first.header("Set-Cookie"))
        #expect(setCookie.hasPrefix("exo_admin_device="))
        for attribute in ["Path=/admin/signin", "HttpOnly", "Secure", "SameSite=Strict", "Max-Age=7776000"] {
            #expect(setCookie.contains("; \(attribute)"), "\(setCookie)")
        }
        let device = String(setCookie.dropFirst("exo_admin_device=".count).prefix { $0 != ";" })
        #expect(device.count >= 40)
        let stored = try server.withDatabase {
            try $0.query("SELECT client_hash FROM admin_known_clients").map { try $0.decode([UInt8].self, at: 0) }
        }
        #expect(stored.count == 2, "the address and the device")
        #expect(!stored.contains(Array(device.utf8)) && !stored.contains(Base64URL.decode(device) ?? []), "only hashes at rest")

        // Ten strangers guess at once, two guesses each from their own address: ten fill the
        // per-email counter, and the rest are slowed.
        let statuses = Mutex<[Int]>([])
        try onThreads(10) { index in
            for _ in 0..<2 {
                let status = try signIn("a stranger's guess", from: "203.0.113.\(index + 1)").status
                statuses.withLock { $0.append(status) }
            }
        }
        #expect(tally(statuses.withLock { $0 }) == [401: 10, 429: 10])
        #expect(try signIn(Self.adminPassword, from: "198.51.100.1").status == 429, "a new address is held by the per-email counter")
        #expect(try signIn(Self.adminPassword, from: "198.51.100.2", cookie: "not-a-device-this-server-made").status == 429)
        let fromKnownAddress = try signIn(Self.adminPassword, from: "192.0.2.10")
        #expect(fromKnownAddress.status == 200, "the address that signed in before: \(fromKnownAddress.text)")
        let withDevice = try signIn(Self.adminPassword, from: "198.51.100.3", cookie: device)
        #expect(withDevice.status == 200, "a new address with the device cookie: \(withDevice.text)")
        #expect(withDevice.header("Set-Cookie") == nil, "a known device keeps its token")
        // A stranger from a known address still meets the owner rule of that address.
        #expect(try signIn("a wrong guess", from: "198.51.100.3", cookie: device).status == 401)
    }

    @Test func theConsoleIsOnePageWithAStrictPolicyAndNoInlineCode() throws {
        let server = try TestServer("admin_console_files")
        defer { server.shutdown() }
        let redirect = try server.call("GET", "/console")
        #expect(redirect.status == 301)
        #expect(redirect.header("Location") == "/console/")
        let files = [
            ("/console/", "text/html"), ("/console/console.css", "text/css"), ("/console/console.js", "text/javascript"),
            ("/favicon.svg", "image/svg+xml"), ("/favicon.ico", "image/svg+xml"),
        ]
        for (path, type) in files {
            let reply = try server.call("GET", path)
            #expect(reply.status == 200, "\(path)")
            #expect(reply.header("Content-Type")?.hasPrefix(type) == true, "\(path)")
            let policy = reply.header("Content-Security-Policy") ?? ""
            #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self'") && !policy.contains("unsafe"), "\(policy)")
            #expect(reply.header("X-Frame-Options") == "DENY")
            #expect(reply.header("Set-Cookie") == nil)
            // The SVG namespace is a name, not a place the page loads from.
            let text = reply.text.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "")
            #expect(!text.contains("http://") && !text.contains("https://"), "\(path) names another origin")
            if type == "text/html" {
                #expect(!text.contains("<script>") && !text.contains(" style="))
                #expect(text.firstRange(of: #/ on[a-z]+=/#) == nil, "an inline event handler")
            }
            if type == "text/javascript" {
                #expect(!reply.text.contains("innerHTML") && !reply.text.contains("document.cookie") && !reply.text.contains("localStorage"))
            }
        }
    }

    /// The console in a real headless Chromium (`Tests/Browser/console.py`, selenium): sign-in,
    /// dashboard, search by email and by a custom field, a date edited and saved, the image grid,
    /// a user disabled and their token refused, a refused schema change, the audit log. The
    /// screenshots go to `artifacts/screenshots/console/` (CI keeps them; the README shows one).
    @Test(.drill) func theConsoleWorksInARealBrowser() throws {
        let server = try TestServer("admin_console")
        defer { server.shutdown() }
        _ = try server.app.accounts.administrators.createAdmin(email: "operator@example.com", password: Self.adminPassword)
        let target = try server.register(
            email: "siti.rahma@example.com",
            extra:
                #", "firstname": "Siti", "lastname": "Rahma", "data": {"dateOfBirth": "1990-01-01", "city": "Surabaya", "isMarried": true, "weight": 58, "height": 1.62}"#
        )
        let neighbour = try server.register(email: "budi@example.com", extra: #", "firstname": "Budi", "data": {"city": "Surabaya"}"#)
        // A guest, which the dashboard counts and the guest filter lists alone.
        #expect(try server.call("POST", "/users/guest", json: #"{"firstname": "Tamu", "data": {"city": "Surabaya"}}"#).status == 201)
        for index in 0..<4 {
            _ = try server.register(email: "member\(index)@example.org", extra: #", "data": {"city": "Jakarta"}"#)
        }
        for bytes in [RealFiles.png3x2, try TestImages.encode(TestImages.marked(width: 640, height: 480), as: ".jpg[Q=85]")] {
            let type = bytes == RealFiles.png3x2 ? "image/png" : "image/jpeg"
            #expect(try ImageScenarios.upload(server, target.token, type, bytes).status == 201)
        }
        // A change of address the user asked for and has not confirmed: the user page shows it.
        let pending = "siti.new@example.com"
        #expect(
            try server.call("PATCH", "/users/me", token: target.token, json: #"{"email": "\#(pending)"}"#).json["pendingEmail"] == .string(pending))
        // A passkey and an Apple identity, which the user page lists; the browser removes the passkey.
        try server.withDatabase { connection in
            _ = try connection.query(
                """
                INSERT INTO passkeys (user_id, credential_id, public_key, name, last_used_at)
                VALUES (\(target.id)::uuid, '\\x101112131415161718191a1b1c1d1e1f'::bytea, '\\xa0'::bytea, 'Work laptop', now())
                """)
            _ = try connection.query(
                "INSERT INTO identities (user_id, provider, subject, email) VALUES (\(target.id)::uuid, 'apple', 'console', 'x@privaterelay.appleid.com')"
            )
            // The user's second factor, on with ten recovery codes: the browser turns it off.
            _ = try connection.query(
                """
                WITH factor AS (
                    INSERT INTO mfa_factors (user_id, secret, enabled_at) VALUES (\(target.id)::uuid, decode(md5(random()::text) || left(md5(random()::text), 8), 'hex'), now()) RETURNING id)
                INSERT INTO mfa_recovery_codes (factor_id, code_hash) SELECT factor.id, sha256(n::text::bytea) FROM factor, generate_series(1, 10) n
                """)
        }
        let screenshots = TestServer.repositoryRoot + "/artifacts/screenshots/console"
        try FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)
        let output = try run(
            "/usr/bin/python3",
            [
                TestServer.repositoryRoot + "/Tests/Browser/console.py", "--url", "http://127.0.0.1:\(server.port)",
                "--admin-email", "operator@example.com", "--admin-password", Self.adminPassword, "--user-email", target.email,
                // One argument with its value: a token may begin with "-", which argparse would take for an option.
                "--user-token=\(target.token)", "--filter-field", "city", "--filter-value", "Surabaya",
                "--expect-filtered", "\(target.email),\(neighbour.email),Guest", "--expect-grid", "640×480,3×2", "--expect-pending", pending,
                "--expect-guests", "1",
                "--screenshots", screenshots,
            ])
        #expect(output.contains("OK: the console behaves"), "\(output)")
        // What the browser did is what the server holds: the operator's own factor is on (the
        // sign-in asks for a code), the user's is off.
        let signIn = try server.call("POST", "/admin/signin", json: #"{"email": "operator@example.com", "password": "\#(Self.adminPassword)"}"#)
        #expect(signIn.code == "mfa_required", "\(signIn.text)")
        #expect(try server.app.accounts.administrators.resetAdminSecondFactor(email: "operator@example.com"))
        let factors = try server.withDatabase {
            try $0.query("SELECT count(*)::int8 FROM mfa_factors WHERE user_id = \(target.id)::uuid")[0].decode(Int.self, at: 0)
        }
        #expect(factors == 0)
        let admin = try Self.signInAdmin(server, email: "operator@example.com")
        let view = try Self.get(server, admin, "/admin/users/\(target.id)")
        #expect(view.json["data"]?["dateOfBirth"] == "1994-05-17")
        #expect(view.json["disabled"] == true)
        #expect(try Self.get(server, target.token, "/users/me").status == 401)
        let methods = try Self.get(server, admin, "/admin/users/\(target.id)/sign-in-methods")
        #expect(methods.json["passkeys"]?.arrayValue?.count == 0 && methods.json["identities"]?.arrayValue?.count == 1)
        let removals = try server.withDatabase { connection in
            try connection.query(
                "SELECT count(*)::int8 FROM admin_audit WHERE action = 'user.passkey.remove' AND target_user_id = \(target.id)::uuid"
            )[0].decode(Int.self, at: 0)
        }
        #expect(removals == 1, "the console's removal is in the audit log")
        for name in [
            "dashboard.png", "users-filter.png", "user.png", "user-images.png", "user-sign-in-methods.png", "user-disabled.png", "schema.png",
            "audit.png", "user-mfa-reset.png", "mfa-enrolled.png", "mfa-signed-in.png",
        ] {
            #expect(FileManager.default.fileExists(atPath: screenshots + "/" + name), "\(name)")
        }
    }
}
