@testable import API
import FoundationEssentials
import Glibc
import HTTPServer
import JSON
import Postgres
import Synchronization
import TestSupport
import Testing

/// The route table: one table, three views (the router, `exosphere routes`, the OpenAPI
/// document), and the policies it declares, proved against the running server route by route.
@Suite(.testThreads, .liveServer("routetable"))
struct RouteTableTests {
    let server: TestServer
    init() throws { server = try #require(TestServer.current) }

    var entries: [RouteListing.Entry] {
        RouteListing.entries(server.app.server.router)
    }

    /// What the document says of each operation's caller: `user`, `admin` or `none`.
    static func documentedAuthentication() throws -> [String: String] {
        let document = try JSONParser.parse(OpenAPIDocument.json)
        var operations: [String: String] = [:]
        for (path, item) in document["paths"]?.objectValue ?? [:] {
            for (method, operation) in item.objectValue ?? [:] where method != "parameters" {
                let security = operation["security"]?[0]
                let caller = security?["adminBearer"] != nil ? "admin" : security?["bearer"] != nil ? "user" : "none"
                operations[method.uppercased() + " " + path] = caller
            }
        }
        return operations
    }

    @Test func theCommandPrintsTheServersTableAndTheDocumentDescribesIt() throws {
        let binary = try #require(ExosphereProcessTests.executable(), "the exosphere binary was not found next to the tests")
        let printed = try JSONParser.parse(try run(binary.path, ["routes", "--json"])).arrayValue ?? []
        // `serve` with no options routes this table; the suite's server differs in its limits only.
        let routed = RouteListing.entries(Configuration())
        #expect(routed.map { "\($0.method) \($0.path)" } == entries.map { "\($0.method) \($0.path)" })
        #expect(routed.map(\.policy) == entries.map(\.policy))
        #expect(routed.map(\.execution) == entries.map(\.execution))
        #expect(printed.count == routed.count)
        for (line, entry) in zip(printed, routed) {
            #expect(line["method"]?.stringValue == entry.method && line["path"]?.stringValue == entry.path, "\(line)")
            let authentication = entry.policy.authentication.rawValue
            #expect(line["authentication"]?.stringValue == authentication, "\(entry.path)")
            #expect(line["bodyLimit"]?.int64Value == Int64(entry.bodyLimit), "\(entry.path)")
            #expect(line["execution"]?.stringValue == entry.execution, "\(entry.path)")
            let throttles: [JSONValue] = line["throttles"]?.arrayValue ?? []
            #expect(Set(throttles.compactMap(\.stringValue)) == Set(entry.policy.throttles.map(\.rawValue)), "\(entry.path)")
            #expect(line["hashing"]?.stringValue == entry.policy.hashing?.rawValue, "\(entry.path)")
            #expect(line["auditAction"]?.stringValue == { if case .read(let action) = entry.policy.audit { action } else { nil } }())
        }
        let text = try run(binary.path, ["routes"]).split(separator: "\n")
        #expect(text.count == routed.count + 1)
        #expect(text.first?.hasPrefix("METHOD  PATH") == true)
        #expect(text.contains { $0.hasPrefix("POST") && $0.contains("/users/signin ") && $0.contains("address,email,email+address") })

        // The running server's table is the document's, operation for operation, caller for caller.
        let documented = try Self.documentedAuthentication()
        #expect(Set(documented.keys) == Set(entries.map { "\($0.method) \($0.path)" }))
        for entry in entries {
            let expected = entry.policy.needsBearerToken ? entry.policy.authentication.rawValue : "none"
            #expect(documented["\(entry.method) \(entry.path)"] == expected, "\(entry.method) \(entry.path)")
        }
    }

    /// A caller without a session (none, a made-up one, the other kind's) gets `401` from the head
    /// alone: the body it announced is never sent, and the answer comes without it.
    @Test func everyRouteForASessionRefusesACallerWithoutOneBeforeItsBody() throws {
        let user = try server.register()
        _ = try server.app.accounts.administrators.createAdmin(email: "routes@example.com", password: AdminAPITests.adminPassword)
        let admin = try AdminAPITests.signInAdmin(server, email: "routes@example.com")
        let guarded = entries.filter(\.policy.needsBearerToken)
        #expect(guarded.count >= 30, "\(guarded.count) routes need a session")
        for entry in guarded {
            let target = entry.path.replacingOccurrences(of: "{field}", with: "nickname")
                .split(separator: "/").map { $0.hasPrefix("{") ? UUID().uuidString.lowercased() : String($0) }.joined(separator: "/")
            let otherKind = entry.policy.authentication == .admin ? user.token : admin
            for authorization in ["", "Authorization: Bearer \(String(repeating: "A", count: 43))\r\n", "Authorization: Bearer \(otherKind)\r\n"] {
                let answer = try sendHead(
                    "\(entry.method) /\(target) HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\(authorization)\r\n"
                )
                #expect(
                    answer?.hasPrefix("HTTP/1.1 401") == true,
                    "\(entry.method) \(entry.path) \(authorization.isEmpty ? "without a token" : "with a wrong one"): \(answer?.prefix(40) ?? "no answer")"
                )
            }
        }
    }

    /// Sends `head` alone on a new connection; what comes back within 10 s, nil for nothing.
    private func sendHead(_ head: String) throws -> String? {
        let fd = try HTTPClient.connect(port: server.port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = head.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    /// A route that checks a password for a caller not yet signed in counts the guesses per client
    /// address and per email; a sign-in also per email from one address (the owner rule).
    @Test func routesThatCheckPasswordsForStrangersCountPerAddressAndPerEmail() {
        let strangers = entries.filter { $0.policy.authentication == .none && $0.policy.hashing != nil }
        #expect(Set(strangers.map(\.path)).isSuperset(of: ["/users/signin", "/admin/signin", "/users"]))
        for entry in strangers {
            #expect(entry.policy.throttles.isSuperset(of: [.perAddress, .perEmail]), "\(entry.method) \(entry.path)")
            if entry.path.hasSuffix("/signin") {
                #expect(entry.policy.throttles.contains(.perEmailAndAddress), "\(entry.method) \(entry.path)")
            }
        }
        for entry in entries where entry.policy.authentication == .user && entry.policy.hashing != nil {
            #expect(entry.policy.throttles.contains(.perUser), "\(entry.method) \(entry.path)")
        }
    }

    /// The throttles a route declares are the ones it counts, and its hashing lane the one it
    /// hashes on: each throttled route is called once, as a client would (a wrong password where
    /// one is checked), on a server of its own, and the counters it moved (`auth_throttles`, by the
    /// scope in their keys; the hashing pool's jobs by lane) must be its declaration. The reset
    /// confirmation is called with a dead token, which is refused before any hashing.
    @Test func everyThrottledRouteCountsWhatItDeclares() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let server = try TestServer("throttle_scopes") { configuration in
            configuration.identityProviders.apple.clientIDs = ["com.example.app"]
            configuration.identityProviders.apple.keySetURL = provider.keySetURL
            configuration.identityProviders.google.clientIDs = ["client.apps.googleusercontent.com"]
            configuration.identityProviders.google.keySetURL = provider.keySetURL
        }
        defer { server.shutdown() }
        let entries = RouteListing.entries(server.app.server.router)
        let user = try server.register()
        // Changes of the ways in need it (and a fresh authentication, which registering is); a
        // verification mail is asked for an unverified address only.
        try server.verifyAddress(user)
        let unverified = try server.register()
        let password = server.uniquePassword("new")
        let calls: [String: (token: String?, body: String)] = [
            "POST /users": (nil, #"{"email": "scopes-\#(UUID().uuidString)@example.com", "password": "\#(password)"}"#),
            "POST /users/signin": (nil, #"{"email": "\#(user.email)", "password": "not the password"}"#),
            "POST /admin/signin": (nil, #"{"email": "nobody-admin@example.com", "password": "not the password"}"#),
            "POST /users/password-reset": (nil, #"{"email": "\#(user.email)"}"#),
            "POST /users/password-reset/confirm": (nil, #"{"token": "\#(String(repeating: "A", count: 43))", "newPassword": "\#(password)"}"#),
            "POST /users/me/password": (user.token, #"{"oldPassword": "not the password", "newPassword": "\#(password)"}"#),
            "DELETE /users/me": (user.token, #"{"password": "not the password"}"#),
            "POST /users/me/verify-email": (unverified.token, ""),
            "GET /users/me/export": (user.token, ""),
            "PATCH /users/me": (user.token, #"{"email": "scopes-patch-\#(UUID().uuidString)@example.com"}"#),
            "POST /users/signin/apple": (nil, #"{"idToken": "not.a.token"}"#),
            "POST /users/signin/google": (nil, #"{"idToken": "not.a.token"}"#),
            "POST /users/me/identities": (user.token, #"{"provider": "google", "idToken": "not.a.token"}"#),
            "POST /users/signin/passkey/options": (nil, ""),
            "POST /users/signin/nonce": (nil, ""),
            "POST /users/signin/passkey": (
                nil,
                #"{"type": "public-key", "id": "AAAAAAAAAAAAAAAAAAAAAA", "rawId": "AAAAAAAAAAAAAAAAAAAAAA", "response": {"clientDataJSON": "e30", "authenticatorData": "AAAA", "signature": "AAAA"}}"#
            ),
            "PUT /users/me": (user.token, #"{"email": "scopes-put-\#(UUID().uuidString)@example.com", "firstname": "A", "lastname": "B"}"#),
            "POST /users/me/reauthenticate": (user.token, #"{"password": "not the password"}"#),
            "POST /users/me/passkeys/registration": (
                user.token,
                #"{"id": "AAAAAAAAAAAAAAAAAAAAAA", "rawId": "AAAAAAAAAAAAAAAAAAAAAA", "type": "public-key", "response": {"clientDataJSON": "e30", "attestationObject": "AAAA"}}"#
            ),
            "DELETE /users/me/passkeys/{id}": (user.token, ""),
            "DELETE /users/me/identities/{id}": (user.token, ""),
            "POST /users/me/mfa/totp": (user.token, ""),
            "POST /users/me/mfa/totp/confirm": (user.token, #"{"code": "000000"}"#),
            "DELETE /users/me/mfa/totp": (user.token, ""),
            "POST /users/me/mfa/recovery-codes": (user.token, ""),
            "POST /users/signin/mfa": (nil, #"{"mfaToken": "\#(String(repeating: "A", count: 43))", "code": "000000"}"#),
            "POST /admin/signin/mfa": (nil, #"{"mfaToken": "\#(String(repeating: "A", count: 43))", "code": "000000"}"#),
            "POST /users/guest": (nil, ""),
            "POST /users/signin/email-code": (nil, #"{"email": "\#(user.email)"}"#),
            "POST /users/signin/email-code/verify": (nil, #"{"email": "\#(user.email)", "code": "00000000"}"#),
            "POST /users/me/reauthenticate/code": (user.token, ""),
        ]
        let throttled = entries.filter { !$0.policy.throttles.isEmpty }.map { "\($0.method) \($0.path)" }
        #expect(Set(throttled) == Set(calls.keys), "a throttled route without a call here, or a call of a route that declares none")

        func counters() throws -> [String: Int64] {
            try server.withDatabase { connection in
                Dictionary(
                    uniqueKeysWithValues: try connection.query("SELECT key, failures::int8 FROM auth_throttles").map {
                        (try $0.decode(String.self, at: 0), try $0.decode(Int64.self, at: 1))
                    })
            }
        }
        /// `<action>:pair:…` counts per email and address, `…:address:…` per address, `…:email:…` per
        /// email, `…:user:…` per user.
        func scope(of key: String) -> RoutePolicy.Throttle? {
            let parts = key.split(separator: ":", maxSplits: 2)
            guard parts.count == 3 else { return nil }
            return ["pair": .perEmailAndAddress, "address": .perAddress, "email": .perEmail, "user": .perUser][String(parts[1])]
        }
        for entry in entries where !entry.policy.throttles.isEmpty {
            let route = "\(entry.method) \(entry.path)"
            guard let call = calls[route] else { continue }
            let before = try counters()
            let hashedBefore = server.app.hashing.statistics
            var headers = [("Content-Type", "application/json")]
            if let token = call.token { headers.append(("Authorization", "Bearer \(token)")) }
            let reply = try server.send(entry.method, entry.path, headers: headers, body: call.body.isEmpty ? nil : Array(call.body.utf8))
            #expect(reply.status != 429 && reply.status < 500, "\(route): \(reply.status) \(reply.text.prefix(200))")
            // The hashing lane it declares is the one its password work took (a job is counted
            // before its request is answered).
            let hashed = server.app.hashing.statistics
            let bulk = hashed.completedBulk - hashedBefore.completedBulk
            let interactive = hashed.completed - hashedBefore.completed - bulk
            switch route == "POST /users/password-reset/confirm" ? nil : entry.policy.hashing {
            case .interactive?: #expect(interactive >= 1 && bulk == 0, "\(route): \(interactive) interactive, \(bulk) bulk jobs")
            case .bulk?: #expect(bulk >= 1 && interactive == 0, "\(route): \(interactive) interactive, \(bulk) bulk jobs")
            case nil: #expect(interactive == 0 && bulk == 0, "\(route): \(interactive) interactive, \(bulk) bulk jobs")
            }
            let moved = try counters().filter { before[$0.key] != $0.value }.map(\.key)
            let scopes = Set(moved.compactMap(scope))
            #expect(moved.allSatisfy { scope(of: $0) != nil }, "\(route) moved a counter of no known scope: \(moved)")
            if route == "POST /users/password-reset/confirm" || route == "POST /users/signin/mfa" {
                // A token that is no live one's is counted per address only: the email (the
                // user) is the live token's user's, and is counted only with one.
                #expect(scopes == [.perAddress], "\(route): \(moved)")
            } else {
                #expect(scopes == entry.policy.throttles, "\(route) declares \(entry.policy.throttles.sorted()) and moved \(moved)")
            }
        }
    }

    /// Every route that adds or removes a way into the account (a passkey, an identity) needs a
    /// verified address and a recent authentication, and counts against the user's changes.
    @Test func theRoutesThatChangeTheWaysInDeclareTheirRequirements() {
        let waysIn: Set<String> = [
            "POST /users/me/passkeys/registration/options", "POST /users/me/passkeys/registration", "DELETE /users/me/passkeys/{id}",
            "POST /users/me/identities", "DELETE /users/me/identities/{id}", "POST /users/me/mfa/totp", "POST /users/me/mfa/totp/confirm",
            "DELETE /users/me/mfa/totp", "POST /users/me/mfa/recovery-codes",
        ]
        let requiring = entries.filter { $0.policy.authentication == .user && !$0.policy.requirements.isEmpty }
        #expect(Set(requiring.map { "\($0.method) \($0.path)" }) == waysIn)
        // Every administrator's route requires their second factor where the deployment does, but
        // the enrolment's own and the sign-out.
        let admins = entries.filter { $0.policy.authentication == .admin }
        #expect(
            Set(admins.filter { !$0.policy.requirements.contains(.adminSecondFactor) }.map { "\($0.method) \($0.path)" }) == [
                "GET /admin/me/mfa", "POST /admin/me/mfa/totp", "POST /admin/me/mfa/totp/confirm", "POST /admin/signout",
            ])
        for entry in requiring {
            #expect(entry.policy.requirements == [.verifiedAddress, .recentAuthentication], "\(entry.method) \(entry.path)")
            if entry.path != "/users/me/passkeys/registration/options" {
                #expect(entry.policy.throttles == [.perUser], "\(entry.method) \(entry.path)")
            }
        }
    }

    /// The event stream is the one route whose responses a user holds open, and it caps them at
    /// `--max-streams-per-user` (`EventLimitsAPITests` proves the cap).
    @Test func theEventStreamCapsWhatAUserHoldsOpen() {
        let capped = entries.filter { $0.policy.openPerUser != nil }
        #expect(capped.map { "\($0.method) \($0.path)" } == ["GET /users/me/events"])
        #expect(capped.first?.policy.openPerUser == 5)
    }

    /// The table applies what a route requires, before its body is read: every route that declares
    /// requirements is called by an account whose address is unverified (`403 email_unverified`),
    /// then verified but authenticated 301 s ago (`403 reauthentication_required`), then after
    /// `POST /users/me/reauthenticate` (neither: the route's own answer).
    @Test func everyRouteThatRequiresAFreshVerifiedSessionRefusesAnyOther() throws {
        let server = try TestServer("route_requirements")
        defer { server.shutdown() }
        let requiring = RouteListing.entries(server.app.server.router).filter { $0.policy.authentication == .user && !$0.policy.requirements.isEmpty }
        #expect(requiring.count == 9)
        let account = try server.register()
        func callEach() throws -> [String: String] {
            var codes: [String: String] = [:]
            for entry in requiring {
                let path = entry.path.split(separator: "/").map { $0.hasPrefix("{") ? UUID().uuidString.lowercased() : String($0) }
                    .joined(separator: "/")
                let reply = try server.call(entry.method, "/" + path, token: account.token, json: "{}")
                codes["\(entry.method) \(entry.path)"] = reply.code ?? String(reply.status)
            }
            return codes
        }
        for (route, code) in try callEach() { #expect(code == "email_unverified", "\(route)") }
        try server.verifyAddress(account)
        server.advanceClock(by: 301)
        for (route, code) in try callEach() { #expect(code == "reauthentication_required", "\(route)") }
        let wrong = try server.call("POST", "/users/me/reauthenticate", token: account.token, json: #"{"password": "not the password"}"#)
        #expect(wrong.status == 403 && wrong.code == "invalid_password", "\(wrong.text)")
        let proved = try server.call("POST", "/users/me/reauthenticate", token: account.token, json: #"{"password": "\#(account.password)"}"#)
        #expect(proved.status == 200, "\(proved.text)")
        let sessions = try server.call("GET", "/users/me/sessions", token: account.token).json["sessions"]?.arrayValue ?? []
        #expect(sessions.first?["authenticatedAt"] == proved.json["authenticatedAt"] && proved.json["authenticatedAt"] != nil)
        for (route, code) in try callEach() {
            #expect(!["email_unverified", "reauthentication_required"].contains(code), "\(route): \(code)")
        }
        // 300 s later, stale again.
        server.advanceClock(by: 301)
        for (route, code) in try callEach() { #expect(code == "reauthentication_required", "\(route)") }
    }

    /// At most 10 changes of the ways in per user an hour, however many are sent at once.
    @Test func changesOfTheWaysInAreLimitedUnderRacingRequests() throws {
        let server = try TestServer("route_way_in_changes")
        defer { server.shutdown() }
        let account = try server.register()
        try server.verifyAddress(account)
        let statuses = Mutex<[Int]>([])
        try onThreads(16) { _ in
            let reply = try server.call("DELETE", "/users/me/passkeys/\(UUID().uuidString.lowercased())", token: account.token)
            statuses.withLock { $0.append(reply.status) }
        }
        #expect(statuses.withLock { $0.sorted() } == Array(repeating: 404, count: 10) + Array(repeating: 429, count: 6))
    }

    /// Every `/admin/` route but the sign-in and the setup writes an entry of the audit log,
    /// proved by calling each as an administrator would, in the order an operator's day could.
    @Test func everyAdminRouteButSignInWritesAnAuditEntry() throws {
        let admins = entries.filter { $0.path.hasPrefix("/admin/") }
        #expect(
            Set(admins.filter { $0.policy.authentication != .admin }.map(\.path)) == ["/admin/signin", "/admin/signin/mfa", "/admin/setup"],
            "only the sign-in and the setup go without an admin session")
        for entry in admins where entry.policy.authentication == .admin {
            #expect(entry.policy.audit != .none, "\(entry.method) \(entry.path) declares no audit")
        }

        let user = try server.register()
        #expect(try server.call("PATCH", "/users/me", token: user.token, json: #"{"data": {"nickname": "Siti"}}"#).status == 200)
        _ = try server.newSession(user)
        let image = try #require(try ImageScenarios.upload(server, user.token, "image/png", RealFiles.png3x2).json["id"]?.stringValue)
        let sessions = try server.call("GET", "/users/me/sessions", token: user.token).json["sessions"]?.arrayValue ?? []
        let other = try #require(sessions.first { $0["current"] == .bool(false) }?["id"]?.stringValue)
        // A passkey and a linked identity, for the console's removals (nothing is checked on removal).
        let (passkey, identity) = try server.withDatabase { connection in
            (
                try connection.query(
                    """
                    INSERT INTO passkeys (user_id, credential_id, public_key, name)
                    VALUES (\(user.id)::uuid, '\\x000102030405060708090a0b0c0d0e0f'::bytea, '\\xa0'::bytea, 'Audited') RETURNING id::text
                    """)[0].decode(String.self, at: 0),
                try connection.query(
                    "INSERT INTO identities (user_id, provider, subject) VALUES (\(user.id)::uuid, 'apple', 'audited') RETURNING id::text"
                )[0].decode(String.self, at: 0)
            )
        }
        // A second factor on, for the console's reset of it.
        try server.withDatabase { connection in
            _ = try connection.query(
                """
                INSERT INTO mfa_factors (user_id, secret, enabled_at)
                VALUES (\(user.id)::uuid, decode(md5(random()::text) || left(md5(random()::text), 8), 'hex'), now())
                """)
        }
        _ = try server.app.accounts.administrators.createAdmin(email: "auditor@example.com", password: AdminAPITests.adminPassword)
        let admin = try AdminAPITests.signInAdmin(server, email: "auditor@example.com")

        func count() throws -> Int {
            try server.withDatabase { connection in
                try connection.query("SELECT count(*)::int8 FROM admin_audit WHERE admin_email = 'auditor@example.com'")[0].decode(Int.self, at: 0)
            }
        }
        var bodies: [String: String] = [
            "PATCH /admin/users/{id}": #"{"firstname": "Audited"}"#, "PUT /admin/schema/{field}": #"{"type": "string"}"#,
        ]
        // The administrator's own enrolment comes first, and its confirmation takes the code of its secret.
        let first = ["POST /admin/me/mfa/totp", "POST /admin/me/mfa/totp/confirm"]
        // What ends the user or the admin session goes last.
        let last = [
            "DELETE /admin/users/{id}/sessions/{sid}", "DELETE /admin/users/{id}/sessions", "DELETE /admin/users/{id}", "POST /admin/signout",
        ]
        func rank(_ route: String) -> Int { first.firstIndex(of: route).map { $0 - 10 } ?? last.firstIndex(of: route) ?? -1 }
        let ordered = admins.filter { $0.policy.authentication == .admin }.map { "\($0.method) \($0.path)" }
            .sorted { rank($0) < rank($1) }
        for route in ordered {
            let parts = route.split(separator: " ")
            let target =
                String(parts[1]).replacingOccurrences(of: "{id}", with: user.id).replacingOccurrences(of: "{iid}", with: image)
                .replacingOccurrences(of: "{sid}", with: other).replacingOccurrences(of: "{field}", with: "nickname")
                .replacingOccurrences(of: "{passkeyID}", with: passkey).replacingOccurrences(of: "{identityID}", with: identity)
                + (route.hasSuffix("/thumbnail") ? "?size=128" : "")
            let before = try count()
            let reply = try server.send(
                String(parts[0]), target, headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
                body: bodies[route].map { Array($0.utf8) })
            #expect((200..<300).contains(reply.status), "\(route): \(reply.status) \(reply.text.prefix(200))")
            #expect(try count() > before, "\(route) wrote no audit entry")
            if route == first[0], let secret = reply.json["secret"]?.stringValue {
                server.remember(token: secret)
                bodies[first[1]] = #"{"code": "\#(try totpCode(secret: secret, at: server.clock.now()))"}"#
            }
            if route == first[1] { reply.json["recoveryCodes"]?.arrayValue?.compactMap(\.stringValue).forEach { server.remember(token: $0) } }
        }
    }
}
