import API
import Cryptography
import Foundation
import JSON
import Postgres
import Synchronization
import TestSupport
import Testing

/// Passkeys: end to end in headless Chromium with its virtual authenticator
/// (`Tests/Browser/passkeys.py`), then what the server holds and the management routes.
@Suite(.testThreads, .serialized)
struct PasskeysAPITests {
    /// A server whose RP id is `localhost` and whose origin is `http://localhost:PORT`, the port
    /// chosen before it starts (WebAuthn takes no IP address as an RP id).
    static func server(_ name: String) throws -> (TestServer, Int) {
        let port = try ExosphereProcessTests.freePort()
        let server = try TestServer(name) { configuration in
            configuration.server.port = port
            configuration.publicURL = "http://localhost:\(port)"
        }
        return (server, port)
    }

    static func finish(_ server: TestServer, sourceLocation: SourceLocation = #_sourceLocation) {
        server.shutdown()
        let problems = server.leaks()
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
        if problems.isEmpty { unlink(server.logPath) }
    }

    /// The browser registers a passkey and signs in with it; every refusal the script tries is
    /// refused (another origin, replays, a counter gone back, no user verification). Then the
    /// database holds one credential of the user, its counter moved, and the passkey is listed,
    /// renamed, and deleted only while another way in is left.
    @Test(.drill) func aRealBrowserRegistersAndSignsInWithAPasskey() throws {
        let (server, port) = try Self.server("passkeys_browser")
        defer { Self.finish(server) }
        let account = try server.register(extra: #", "firstname": "Ayu""#)
        try server.verifyAddress(account)
        let screenshots = TestServer.repositoryRoot + "/artifacts/screenshots/passkeys"
        try FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)
        let output = try run(
            "/usr/bin/python3",
            [
                TestServer.repositoryRoot + "/Tests/Browser/passkeys.py", "--url", "http://localhost:\(port)", "--token", account.token,
                "--expect-email", account.email, "--screenshots", screenshots,
            ])
        #expect(output.contains("OK: passkeys behave"), "\(output)")

        let rows = try server.withDatabase { connection in
            try connection.query("SELECT sign_count::int8, name FROM passkeys WHERE user_id = \(account.id)::uuid").map {
                (try $0.decode(Int64.self, at: 0), try $0.decode(String.self, at: 1))
            }
        }
        #expect(rows.count == 1)
        #expect(rows.first?.1 == "Headless laptop")
        #expect((rows.first?.0 ?? 0) >= 3, "three sign-ins moved the counter: \(rows)")
        // Used up: all but the one of the registration from another origin, refused before its challenge was looked at.
        let challengesLeft = try server.withDatabase {
            try $0.query("SELECT count(*)::int8 FROM webauthn_challenges WHERE purpose = 'registration'")[0].decode(Int.self, at: 0)
        }
        #expect(challengesLeft == 1)

        // The activity says how each sign-in was made: three by the passkey, then one by password.
        _ = try server.newSession(account)
        let events = try server.call("GET", "/users/me/activity", token: account.token).json["events"]?.arrayValue ?? []
        let methods = events.filter { $0["type"] == "signed_in" }.compactMap { $0["method"]?.stringValue }
        #expect(methods == ["password", "passkey", "passkey", "passkey"], "\(methods)")
        #expect(events.filter { $0["type"] == "passkey_added" }.count == 1)

        let listed = try server.call("GET", "/users/me/passkeys", token: account.token)
        #expect(listed.status == 200)
        let passkey = try #require(listed.json["passkeys"]?[0]?["id"]?.stringValue)
        #expect(listed.json["passkeys"]?[0]?["lastUsedAt"]?.stringValue != nil)
        let renamed = try server.call("PATCH", "/users/me/passkeys/\(passkey)", token: account.token, json: #"{"name": " Work phone "}"#)
        #expect(renamed.status == 200 && renamed.json["name"]?.stringValue == "Work phone", "\(renamed.text)")
        #expect(try server.call("PATCH", "/users/me/passkeys/\(passkey)", token: account.token, json: #"{"name": ""}"#).status == 422)
        // The name rules: a control character or a line break is refused, not dropped.
        for name in [#"Work\u0000 phone"#, #"Work phone\u0007"#, #"Work\nphone"#, #"Work\u2028phone"#] {
            let refused = try server.call("PATCH", "/users/me/passkeys/\(passkey)", token: account.token, json: #"{"name": "\#(name)"}"#)
            #expect(refused.status == 422 && refused.json["errors"]?[0]?["field"] == "name", "\(name): \(refused.text)")
        }
        // Another user sees none of it.
        let other = try server.register()
        try server.verifyAddress(other)
        #expect(try server.call("DELETE", "/users/me/passkeys/\(passkey)", token: other.token).status == 404)
        #expect(try server.call("GET", "/users/me/passkeys", token: other.token).json["passkeys"]?.arrayValue?.count == 0)
        // Without a password, the only passkey is the last way in; with another, it goes.
        try server.withDatabase { _ = try $0.query("UPDATE users SET password_hash = '!' WHERE id = \(account.id)::uuid") }
        let refused = try server.call("DELETE", "/users/me/passkeys/\(passkey)", token: account.token)
        #expect(refused.status == 409 && refused.code == "last_sign_in_method", "\(refused.text)")
        let copy = try server.withDatabase { connection in
            try connection.query(
                """
                INSERT INTO passkeys (user_id, credential_id, public_key, name)
                SELECT user_id, credential_id || '\\x00'::bytea, public_key, 'A copy' FROM passkeys WHERE id = \(passkey)::uuid RETURNING id::text
                """)[0].decode(String.self, at: 0)
        }
        #expect(try server.call("DELETE", "/users/me/passkeys/\(copy)", token: account.token).status == 204)
        #expect(FileManager.default.fileExists(atPath: screenshots + "/passkeys.png"))

        // The notice of the browser's passkey carried a link that removes it, even as the last
        // way in (the mailbox can reset the password), and ends every session: in the browser.
        let notice = try #require(try Self.mails(server, subject: "A new way to sign in to").first)
        #expect(notice.replacingOccurrences(of: "=\r\n", with: "").contains("A passkey (Headless laptop)"), "the name goes to the verified address")
        let link = "http://localhost:\(port)/remove-sign-in-method#token=\(try RecoveryAPITests.token(in: notice))"
        let pages = try run(
            "/usr/bin/python3",
            [TestServer.repositoryRoot + "/Tests/Browser/recovery_pages.py", "--remove-link", link, "--screenshots", screenshots])
        #expect(pages.contains("OK: recovery pages behave"), "\(pages)")
        #expect(try server.call("GET", "/users/me/passkeys", token: other.token).status == 200, "another user keeps their session")
        #expect(try server.me(account.token).status == 401, "every session of the user ended")
        #expect(try server.withDatabase { try $0.query("SELECT 1 FROM passkeys WHERE user_id = \(account.id)::uuid").count } == 0)
        for name in ["remove-confirm.png", "remove-done.png", "remove-invalid.png"] {
            #expect(FileManager.default.fileExists(atPath: screenshots + "/" + name), "\(name)")
        }
    }

    /// The dev mailbox's mails whose subject starts with `subject`, oldest first.
    /// The dev mailbox's mails with `subject`, once one of them has `text` in its body (quoted-
    /// printable soft breaks removed): an earlier mail with the same subject does not end the wait.
    static func mails(_ server: TestServer, subject: String, containing text: String? = nil) throws -> [String] {
        guard case .mailbox(let directory) = server.app.configuration.mail.transport else { throw TestFailure("no dev mailbox") }
        var found: [String] = []
        try waitUntil(timeout: .seconds(10), "a mail '\(subject)'" + (text.map { " saying '\($0)'" } ?? "")) {
            let names = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasSuffix(".eml") }.sorted()
            found = try names.map { try String(contentsOfFile: directory + "/" + $0, encoding: .utf8) }.filter { $0.contains("Subject: " + subject) }
            guard let text else { return !found.isEmpty }
            return found.contains { $0.replacingOccurrences(of: "=\r\n", with: "").contains(text) }
        }
        return found
    }

    /// What is not a WebAuthn response is a clear `4xx` before any check; the options have the
    /// shapes the browsers parse; a sign-in with an unknown credential is `401`.
    @Test func optionsAndMalformedResponses() throws {
        let (server, port) = try Self.server("passkeys_shapes")
        defer { Self.finish(server) }
        let account = try server.register()
        try server.verifyAddress(account)
        // A name with a control character is refused, by the name rules, before the passkey is
        // looked up (U+0000, which PostgreSQL text cannot hold, was a 500 the conformance run found).
        for escaped in [#"\u0014\u0000."#, #"Work\u0000"#, #"a\u0007b"#] {
            let renamed = try server.call(
                "PATCH", "/users/me/passkeys/\(UUID().uuidString.lowercased())", token: account.token, json: #"{"name": "\#(escaped)"}"#)
            #expect(renamed.status == 422 && renamed.firstError.field == "name", "\(escaped): \(renamed.text)")
        }
        let empty = try server.call(
            "PATCH", "/users/me/passkeys/\(UUID().uuidString.lowercased())", token: account.token, json: #"{"name": " \u0014\u0000 "}"#)
        #expect(empty.status == 422 && empty.firstError.field == "name", "\(empty.text)")
        let creation = try server.call("POST", "/users/me/passkeys/registration/options", token: account.token)
        #expect(creation.status == 200)
        #expect(creation.json["rp"]?["id"]?.stringValue == "localhost")
        #expect(creation.json["user"]?["name"]?.stringValue == account.email)
        #expect(creation.json["authenticatorSelection"]?["residentKey"]?.stringValue == "required")
        #expect(creation.json["authenticatorSelection"]?["userVerification"]?.stringValue == "required")
        #expect(creation.json["pubKeyCredParams"]?.arrayValue?.compactMap { $0["alg"]?.int64Value } == [-7, -257])
        #expect(creation.json["challenge"]?.stringValue?.count == 43)
        #expect(try server.call("POST", "/users/me/passkeys/registration/options").status == 401)
        let request = try server.call("POST", "/users/signin/passkey/options")
        #expect(request.status == 200)
        #expect(request.json["rpId"]?.stringValue == "localhost" && request.json["userVerification"]?.stringValue == "required")
        #expect(request.json["allowCredentials"]?.arrayValue?.isEmpty == true)
        let clientData = Data(#"{"type":"webauthn.get","challenge":"AAAA","origin":"http://localhost:\#(port)"}"#.utf8).base64EncodedString()
            .replacingOccurrences(of: "=", with: "")
        let malformed: [(String, Int)] = [
            (#"{}"#, 422),
            (#"{"type": "public-key", "id": "AAAA", "rawId": "AAAA"}"#, 422),
            (#"{"type": "password", "id": "AAAA", "rawId": "AAAA", "response": {}}"#, 422),
            (#"{"type": "public-key", "id": "AAAA", "rawId": "BBBB", "response": {}}"#, 422),
            (#"{"type": "public-key", "id": "AAAA", "rawId": "AAAA", "response": {"clientDataJSON": "!!"}}"#, 422),
            (#"{"type": "public-key", "id": "AAAA", "rawId": "AAAA", "response": {}, "extra": 1}"#, 422),
        ]
        for (body, status) in malformed {
            let reply = try server.call("POST", "/users/signin/passkey", json: body)
            #expect(reply.status == status, "\(body): \(reply.status) \(reply.text)")
        }
        let unknown = try server.call(
            "POST", "/users/signin/passkey",
            json:
                #"{"type": "public-key", "id": "AAAAAAAAAAAAAAAAAAAAAA", "rawId": "AAAAAAAAAAAAAAAAAAAAAA", "response": {"clientDataJSON": "\#(clientData)", "authenticatorData": "AAAA", "signature": "AAAA"}}"#
        )
        #expect(unknown.status == 401 && unknown.code == "invalid_credentials", "\(unknown.text)")
        let registration = try server.call(
            "POST", "/users/me/passkeys/registration", token: account.token,
            json:
                #"{"type": "public-key", "id": "AAAA", "rawId": "AAAA", "response": {"clientDataJSON": "\#(clientData)", "attestationObject": "oA"}}"#
        )
        #expect(registration.status == 422 && registration.code == "invalid_passkey", "\(registration.text)")
    }

    /// The ceremonies with a software authenticator over the API: a challenge that expired, one
    /// of another user, a user handle of another user are refused; one assertion posted by eight
    /// clients at once signs in once (its challenge is used up by the first).
    @Test func challengesAreSingleUseEvenWhenClientsRace() throws {
        let (server, port) = try Self.server("passkeys_software")
        defer { Self.finish(server) }
        let origin = "http://localhost:\(port)"
        let key = try SoftwareAuthenticator()
        let (owner, stranger) = (try server.register(), try server.register())
        for account in [owner, stranger] { try server.verifyAddress(account) }
        func challenge(_ path: String, _ token: String? = nil) throws -> String {
            try #require(try server.call("POST", path, token: token).json["challenge"]?.stringValue)
        }
        func registration(_ challenge: String, token: String) throws -> Reply {
            let clientData = SoftwareAuthenticator.clientData("webauthn.create", challenge: challenge, origin: origin)
            let object = SoftwareAuthenticator.attestationObject(
                "none", data: key.authenticatorData(rpID: "localhost", flags: 0x45, count: 0, attested: true))
            let id = TestSigningKeys.base64URL(key.credentialID)
            return try server.call(
                "POST", "/users/me/passkeys/registration", token: token,
                json:
                    #"{"id": "\#(id)", "rawId": "\#(id)", "type": "public-key", "response": {"clientDataJSON": "\#(TestSigningKeys.base64URL(clientData))", "attestationObject": "\#(TestSigningKeys.base64URL(object))"}}"#
            )
        }
        func assertion(_ challenge: String, count: UInt32, userHandle: [UInt8]) throws -> String {
            let clientData = SoftwareAuthenticator.clientData("webauthn.get", challenge: challenge, origin: origin)
            let data = key.authenticatorData(rpID: "localhost", flags: 0x05, count: count, attested: false)
            let signature = try key.sign(data + SHA256.hash(clientData))
            let id = TestSigningKeys.base64URL(key.credentialID)
            return
                #"{"id": "\#(id)", "rawId": "\#(id)", "type": "public-key", "response": {"clientDataJSON": "\#(TestSigningKeys.base64URL(clientData))", "authenticatorData": "\#(TestSigningKeys.base64URL(data))", "signature": "\#(TestSigningKeys.base64URL(signature))", "userHandle": "\#(TestSigningKeys.base64URL(userHandle))"}}"#
        }
        let options = "/users/me/passkeys/registration/options"
        // Another user's challenge, then an expired one (its five minutes passed), then a good one.
        let foreign = try registration(try challenge(options, stranger.token), token: owner.token)
        #expect(foreign.status == 422 && foreign.code == "invalid_passkey", "\(foreign.text)")
        let stale = try challenge(options, owner.token)
        server.advanceClock(by: 301)
        // The registration's sign-in is as old now: the holder proves the password again first.
        #expect(try registration(stale, token: owner.token).code == "reauthentication_required")
        let proved = try server.call("POST", "/users/me/reauthenticate", token: owner.token, json: #"{"password": "\#(owner.password)"}"#)
        #expect(proved.status == 200, "\(proved.text)")
        #expect(try registration(stale, token: owner.token).status == 422)
        let registered = try registration(try challenge(options, owner.token), token: owner.token)
        #expect(registered.status == 201, "\(registered.text)")

        let handle = try #require(UUID(uuidString: owner.id)).uuid
        let ownerHandle = withUnsafeBytes(of: handle) { Array($0) }
        let signIn = "/users/signin/passkey/options"
        let wrongHandle = try server.call(
            "POST", "/users/signin/passkey", json: try assertion(try challenge(signIn), count: 1, userHandle: [UInt8](repeating: 7, count: 16)))
        #expect(wrongHandle.status == 401, "\(wrongHandle.text)")
        let expired = try challenge(signIn)
        server.advanceClock(by: 301)
        #expect(try server.call("POST", "/users/signin/passkey", json: try assertion(expired, count: 1, userHandle: ownerHandle)).status == 401)

        let body = try assertion(try challenge(signIn), count: 1, userHandle: ownerHandle)
        let statuses = Mutex<[Int]>([])
        try onThreads(8) { _ in
            let reply = try server.call("POST", "/users/signin/passkey", json: body)
            if let token = reply.json["accessToken"]?.stringValue { server.remember(token: token) }
            statuses.withLock { $0.append(reply.status) }
        }
        #expect(statuses.withLock { $0.sorted() } == [200] + Array(repeating: 401, count: 7))
        let sessions = try server.call("GET", "/users/me/sessions", token: owner.token).json["sessions"]?.arrayValue?.count
        #expect(sessions == 2, "the registration's session and the one sign-in")

        // A reauthentication with the passkey: by its owner's session only, and once per
        // assertion even when clients race with it; refusals are 422 (the session stays).
        server.advanceClock(by: 301)
        let reauthenticate = "/users/me/reauthenticate"
        let foreignProof = try server.call(
            "POST", reauthenticate, token: stranger.token,
            json: #"{"passkey": \#(try assertion(try challenge(signIn), count: 3, userHandle: ownerHandle))}"#)
        #expect(foreignProof.status == 422 && foreignProof.code == "invalid_credentials", "\(foreignProof.text)")
        #expect(try server.me(stranger.token).status == 200)
        func authenticatedAt() throws -> String? {
            try server.call("GET", "/users/me/sessions", token: owner.token).json["sessions"]?.arrayValue?
                .first { $0["current"] == true }?["authenticatedAt"]?.stringValue
        }
        let before = try #require(try authenticatedAt())
        let proof = #"{"passkey": \#(try assertion(try challenge(signIn), count: 4, userHandle: ownerHandle))}"#
        let proofs = Mutex<[Int]>([])
        try onThreads(4) { _ in
            let status = try server.call("POST", reauthenticate, token: owner.token, json: proof).status
            proofs.withLock { $0.append(status) }
        }
        #expect(proofs.withLock { $0.sorted() } == [200, 422, 422, 422])
        let after = try #require(try authenticatedAt())
        #expect(after > before, "the reauthentication moved authenticatedAt: \(before) → \(after)")
        #expect(try server.call("POST", reauthenticate, token: owner.token, json: #"{"passkey": "not an object"}"#).status == 422)
    }
}
