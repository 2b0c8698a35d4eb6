import API
import Accounts
import Cryptography
import Foundation
import JSON
import Postgres
import Synchronization
import TestSupport
import Testing

/// Sign in with Apple and Google end to end: a real key set server (over TLS with the test CA, or
/// plain http on loopback), tokens signed with keys the `openssl` command made, the server's
/// answers, and what the database holds after.
@Suite(.testThreads, .serialized)
struct IdentitySignInAPITests {
    static let googleClient = "1234-test.apps.googleusercontent.com"
    static let appleClient = "com.example.exosphere"
    static let google = "https://accounts.google.com"
    static let apple = "https://appleid.apple.com"

    /// A server with Google (and Apple, when `apple`) on, reading keys from `provider`.
    static func server(
        _ name: String, _ provider: TestIdentityProvider, apple: Bool = false, sharingDatabaseWith sibling: TestServer? = nil,
        _ adjust: @escaping (inout Configuration) -> Void = { _ in }
    ) throws -> TestServer {
        let caFile = try TestCertificates.shared().caFile
        return try TestServer(name, sharingDatabaseWith: sibling) { configuration in
            // These tests are of the tokens' checks: their nonces are the app's own
            // (`IDTokenNonceAPITests` has the server's, which are required by default).
            configuration.accounts.idTokenNonceRequired = false
            configuration.identityProviders.google.clientIDs = ["another-client", googleClient]
            configuration.identityProviders.google.keySetURL = provider.keySetURL
            configuration.identityProviders.google.caFile = caFile
            if apple {
                configuration.identityProviders.apple.clientIDs = [appleClient]
                configuration.identityProviders.apple.keySetURL = provider.keySetURL
                configuration.identityProviders.apple.caFile = caFile
            }
            configuration.identityProviders.keyTiming.refetchInterval = 0
            adjust(&configuration)
        }
    }

    static func googleToken(
        subject: String, email: String?, verified: Bool = true, audience: String = googleClient, issuer: String = google,
        expiresIn: Double = 600, keyID: String = "key-1", nonce: String? = nil, extra: [String: String] = [:]
    ) throws -> String {
        var fields = extra
        if let email {
            fields["email"] = jsonString(email)
            fields["email_verified"] = verified ? "true" : "false"
        }
        if let nonce { fields["nonce"] = jsonString(SHA256.hexDigest(nonce.utf8)) }
        let claims = TestSigningKeys.claims(issuer: issuer, audience: audience, subject: subject, expiresIn: expiresIn, extra: fields)
        return try TestSigningKeys.shared().token(claims, keyID: keyID)
    }

    @discardableResult
    static func signIn(_ server: TestServer, _ idToken: String, provider: String = "google", nonce: String? = nil) throws -> Reply {
        server.remember(token: idToken)
        let nonceField = nonce.map { #", "nonce": \#(jsonString($0))"# } ?? ""
        let reply = try server.call("POST", "/users/signin/\(provider)", json: #"{"idToken": \#(jsonString(idToken))\#(nonceField)}"#)
        if let token = reply.json["accessToken"]?.stringValue { server.remember(token: token) }
        return reply
    }

    static func finish(_ server: TestServer, sourceLocation: SourceLocation = #_sourceLocation) {
        server.shutdown()
        let problems = server.leaks()
        #expect(problems.isEmpty, "\(problems)", sourceLocation: sourceLocation)
        if problems.isEmpty { unlink(server.logPath) }
    }

    static func count(_ server: TestServer, _ sql: PostgresQuery) throws -> Int {
        try server.withDatabase { try $0.query(sql)[0].decode(Int.self, at: 0) }
    }

    /// Waits until the server's dev mailbox holds `count` mails with `subject` (and checks there
    /// are no more).
    static func waitForMails(_ server: TestServer, subject: String, count: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard case .mailbox(let directory) = server.app.configuration.mail.transport else { throw TestFailure("no dev mailbox") }
        func matching() -> Int {
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0.hasSuffix(".eml") }
            return names.filter { ((try? String(contentsOfFile: directory + "/" + $0, encoding: .utf8)) ?? "").contains("Subject: " + subject) }.count
        }
        try waitUntil(timeout: .seconds(10), "\(count) mails '\(subject)'") { matching() >= count }
        #expect(matching() == count, sourceLocation: sourceLocation)
    }

    /// The first sign-in makes the account (verified as the token says, names from it, no
    /// password); later ones find it by the subject, whatever address the token carries then. The
    /// key set came over TLS, verified against the test CA, and was fetched once.
    @Test func theFirstSignInMakesTheAccountAndLaterOnesFindItBySubject() throws {
        let provider = try TestIdentityProvider(tls: true)
        try provider.serve(["key-1"])
        try provider.cacheControl("public, max-age=3600")
        let server = try Self.server("idp_first", provider)
        defer { Self.finish(server) }
        let email = server.uniqueEmail("google")
        let first = try Self.signIn(
            server, try Self.googleToken(subject: "g-1", email: email, extra: ["given_name": #""Ayu""#, "family_name": #""Tan""#]))
        try #require(first.status == 200, "\(first.status) \(first.text)")
        #expect(first.json["user"]?["email"]?.stringValue == email)
        #expect(first.json["user"]?["emailVerified"]?.boolValue == true)
        #expect(first.json["user"]?["firstname"]?.stringValue == "Ayu")
        #expect(first.json["user"]?["lastname"]?.stringValue == "Tan")
        let userID = try #require(first.json["user"]?["id"]?.stringValue)
        let token = try #require(first.json["accessToken"]?.stringValue)
        #expect(try server.me(token).status == 200)

        let again = try Self.signIn(server, try Self.googleToken(subject: "g-1", email: "changed-\(email)"))
        #expect(again.status == 200, "\(again.text)")
        #expect(again.json["user"]?["id"]?.stringValue == userID)
        #expect(provider.requestCount == 1, "max-age=3600: the key set is fetched once, not per sign-in")

        let events = try server.call("GET", "/users/me/activity", token: token).json["events"]?.arrayValue ?? []
        #expect(events.filter { $0["type"] == "signed_in" }.compactMap { $0["method"]?.stringValue } == ["google", "google"])

        let identities = try server.call("GET", "/users/me/identities", token: token)
        #expect(identities.status == 200)
        #expect(identities.json["identities"]?.arrayValue?.count == 1)
        #expect(identities.json["identities"]?[0]?["provider"]?.stringValue == "google")
        #expect(identities.json["identities"]?[0]?["email"]?.stringValue == email)
        #expect(identities.json["identities"]?[0]?["lastUsedAt"]?.stringValue != nil)
        #expect(identities.json["hasPassword"]?.boolValue == false)
        // No password verifies against an account without one; the answer is the wrong password's.
        let byPassword = try server.signIn(email, "!")
        #expect(byPassword.status == 401 && byPassword.code == "invalid_credentials")
        #expect(try Self.count(server, "SELECT count(*)::int8 FROM users WHERE password_hash = '!'") == 1)
    }

    /// Every fault of a token is `401 invalid_id_token`, and none of them makes an account.
    @Test func everyFaultOfATokenIsRefused() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let server = try Self.server("idp_faults", provider, apple: true)
        defer { Self.finish(server) }
        let email = server.uniqueEmail("faults")
        let keys = try TestSigningKeys.shared()
        let valid = TestSigningKeys.claims(issuer: Self.google, audience: Self.googleClient, subject: "g-faults")
        let tokens: [(String, String)] = [
            ("another app's audience", try Self.googleToken(subject: "g-faults", email: email, audience: "someone-else")),
            ("another issuer", try Self.googleToken(subject: "g-faults", email: email, issuer: "https://evil.example")),
            ("Apple's issuer on Google's route", try Self.googleToken(subject: "g-faults", email: email, issuer: Self.apple)),
            ("expired past the skew", try Self.googleToken(subject: "g-faults", email: email, expiresIn: -120)),
            ("signed by another key under key-1's kid", try keys.token(valid, keyID: "key-2", headerKeyID: "key-1")),
            ("alg none", keys.base64URL(Array(#"{"alg":"none","kid":"key-1"}"#.utf8)) + "." + keys.base64URL(Array(valid.utf8)) + "."),
            ("garbage", "not.a.token"),
            ("no email", try Self.googleToken(subject: "g-faults", email: nil)),
        ]
        for (fault, token) in tokens {
            let reply = try Self.signIn(server, token)
            #expect(reply.status == 401 && reply.code == "invalid_id_token", "\(fault): \(reply.status) \(reply.text)")
        }
        // A Google token on Apple's route: the issuer and the audience are Apple's there.
        let onApple = try Self.signIn(server, try Self.googleToken(subject: "g-faults", email: email), provider: "apple")
        #expect(onApple.status == 401 && onApple.code == "invalid_id_token", "\(onApple.text)")
        // The nonce: the token carries the SHA-256 of what the app sends.
        let nonced = try Self.googleToken(subject: "g-faults", email: email, nonce: "the-app-nonce")
        let wrongNonce = try Self.signIn(server, nonced, nonce: "another-nonce")
        #expect(wrongNonce.status == 401 && wrongNonce.code == "invalid_id_token", "\(wrongNonce.text)")
        #expect(try Self.count(server, "SELECT count(*)::int8 FROM users") == 0)
        let right = try Self.signIn(server, nonced, nonce: "the-app-nonce")
        #expect(right.status == 200, "\(right.text)")
        #expect(try Self.count(server, "SELECT count(*)::int8 FROM users") == 1)
    }

    /// Apple: its issuer, its audience, `email_verified` as the string "true", a private relay
    /// address as an ordinary one; Apple off on a server without its ids answers 404.
    @Test func appleSignInAndAProviderThatIsOff() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1", "key-2"])
        let server = try Self.server("idp_apple", provider, apple: true)
        defer { Self.finish(server) }
        let relay = "x\(UInt32.random(in: 0...UInt32.max))@privaterelay.appleid.com"
        let claims = TestSigningKeys.claims(
            issuer: Self.apple, audience: Self.appleClient, subject: "000123.apple",
            extra: ["email": jsonString(relay), "email_verified": #""true""#, "is_private_email": #""true""#])
        let reply = try Self.signIn(server, try TestSigningKeys.shared().token(claims, keyID: "key-2"), provider: "apple")
        #expect(reply.status == 200, "\(reply.text)")
        #expect(reply.json["user"]?["email"]?.stringValue == relay)
        #expect(reply.json["user"]?["emailVerified"]?.boolValue == true)

        let off = try Self.server("idp_off", provider)
        defer { Self.finish(off) }
        let offReply = try Self.signIn(off, try TestSigningKeys.shared().token(claims), provider: "apple")
        #expect(offReply.status == 404, "\(offReply.text)")
    }

    /// The provider rotates its keys: a token of a key the cached set lacks fetches the set again
    /// and is accepted; a key in no set is refused. With a long refetch interval, a flood of unknown
    /// `kid`s fetches at most once.
    @Test func anUnknownKeyFetchesTheRotatedSet() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        try provider.cacheControl("max-age=86400")
        let server = try Self.server("idp_rotate", provider)
        defer { Self.finish(server) }
        #expect(try Self.signIn(server, try Self.googleToken(subject: "g-r1", email: server.uniqueEmail())).status == 200)
        #expect(provider.requestCount == 1)
        try provider.serve(["key-2"])
        let rotated = try Self.signIn(server, try Self.googleToken(subject: "g-r2", email: server.uniqueEmail(), keyID: "key-2"))
        #expect(rotated.status == 200, "\(rotated.text)")
        #expect(provider.requestCount == 2)
        let unknown = try Self.signIn(server, try Self.googleToken(subject: "g-r3", email: server.uniqueEmail(), keyID: "key-3"))
        #expect(unknown.status == 401 && unknown.code == "invalid_id_token", "\(unknown.text)")
        // key-1 left the set with the rotation.
        let retired = try Self.signIn(server, try Self.googleToken(subject: "g-r1", email: server.uniqueEmail()))
        #expect(retired.status == 401, "\(retired.text)")

        let patient = try Self.server("idp_rotate_slow", provider) { $0.identityProviders.keyTiming.refetchInterval = 3_600 }
        defer { Self.finish(patient) }
        let before = provider.requestCount
        #expect(try Self.signIn(patient, try Self.googleToken(subject: "g-p", email: patient.uniqueEmail(), keyID: "key-2")).status == 200)
        let keys = try TestSigningKeys.shared()
        let claims = TestSigningKeys.claims(issuer: Self.google, audience: Self.googleClient, subject: "g-flood")
        for index in 0..<20 {
            let forged = try keys.token(claims, keyID: "key-3", headerKeyID: "random-\(index)")
            #expect(try Self.signIn(patient, forged).status == 401)
        }
        #expect(provider.requestCount - before == 1, "unknown kids fetched \(provider.requestCount - before - 1) more times")
    }

    /// A forged `kid` made the server fetch the key set a moment ago; the provider then publishes a
    /// new key: a token signed by it waits for the next allowed fetch and signs in, where it used to
    /// be refused as "signed by an unknown key" for the rest of the refetch interval. Forged `kid`s
    /// sent at once share that fetch.
    @Test func aNewKeyIsNotRefusedBecauseForgedKeysWereFetchedFor() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        try provider.cacheControl("max-age=86400")
        let server = try Self.server("idp_rotate_wait", provider) { $0.identityProviders.keyTiming.refetchInterval = 2 }
        defer { Self.finish(server) }
        #expect(try Self.signIn(server, try Self.googleToken(subject: "g-w1", email: server.uniqueEmail())).status == 200)
        let keys = try TestSigningKeys.shared()
        let claims = TestSigningKeys.claims(issuer: Self.google, audience: Self.googleClient, subject: "g-forged")
        let forged = try (0..<4).map { try keys.token(claims, keyID: "key-3", headerKeyID: "forged-\($0)") }
        let statuses = Mutex<[Int]>([])
        try onThreads(forged.count) { index in
            let status = try Self.signIn(server, forged[index]).status
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 401, count: forged.count))
        let afterFlood = provider.requestCount
        #expect(afterFlood <= 3, "the forged kids fetched \(afterFlood - 1) times")
        try provider.serve(["key-2"])
        let rotated = try Self.signIn(server, try Self.googleToken(subject: "g-w2", email: server.uniqueEmail(), keyID: "key-2"))
        #expect(rotated.status == 200, "\(rotated.text)")
        #expect(provider.requestCount == afterFlood + 1)
    }

    /// The provider unreachable: with a set fetched before, sign-ins go on with it (the set is
    /// stale and each sign-in tries again); without one ever fetched, `503`, and a provider that
    /// answers an error is unreachable too.
    @Test func theProviderDownWithAndWithoutACachedSet() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        try provider.cacheControl("no-store")
        let server = try Self.server("idp_down", provider) { $0.identityProviders.keyTiming.minimumLifetime = 0 }
        defer { Self.finish(server) }
        let email = server.uniqueEmail("down")
        #expect(try Self.signIn(server, try Self.googleToken(subject: "g-down", email: email)).status == 200)
        try provider.answer(status: 500)
        #expect(try Self.signIn(server, try Self.googleToken(subject: "g-down", email: email)).status == 200)
        let fetchesWhileFailing = provider.requestCount
        #expect(fetchesWhileFailing == 2, "the stale set is fetched again (\(fetchesWhileFailing))")
        provider.stop()
        let whileDown = try Self.signIn(server, try Self.googleToken(subject: "g-down", email: email))
        #expect(whileDown.status == 200, "the last good set serves while the provider is down: \(whileDown.text)")
        let forged = try Self.signIn(server, try Self.googleToken(subject: "g-down", email: email, keyID: "key-2"))
        #expect(forged.status == 401, "\(forged.text)")

        let never = try TestIdentityProvider()
        try never.serve(["key-1"])
        try never.answer(status: 503)
        let fresh = try Self.server("idp_never", never)
        defer { Self.finish(fresh) }
        let unavailable = try Self.signIn(fresh, try Self.googleToken(subject: "g-never", email: fresh.uniqueEmail()))
        #expect(unavailable.status == 503 && unavailable.code == "provider_unavailable", "\(unavailable.text)")
        #expect(unavailable.header("Retry-After") != nil)
        never.stop()
        #expect(try Self.signIn(fresh, try Self.googleToken(subject: "g-never", email: fresh.uniqueEmail())).status == 503)
        fresh.acceptServerErrors(503)
        // The provider back: the next sign-in fetches and succeeds.
        let back = try TestIdentityProvider()
        try back.serve(["key-1"])
        let revived = try Self.server("idp_back", back)
        defer { Self.finish(revived) }
        #expect(try Self.signIn(revived, try Self.googleToken(subject: "g-back", email: revived.uniqueEmail())).status == 200)
    }

    /// An account with a password and the same address: linked only when both the provider and
    /// the account verified the address (`409 account_exists` otherwise); then its owner links
    /// from a signed-in session, and the provider signs them in.
    @Test func anExistingAccountIsLinkedOnlyWhenBothSidesVerified() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let server = try Self.server("idp_link", provider)
        defer { Self.finish(server) }
        let owner = try server.register()
        // Unverified account, verified token: not linked.
        let first = try Self.signIn(server, try Self.googleToken(subject: "g-owner", email: owner.email))
        #expect(first.status == 409 && first.code == "account_exists", "\(first.text)")
        try server.withDatabase { _ = try $0.query("UPDATE users SET email_verified = true WHERE id = \(owner.id)::uuid") }
        // Verified account, unverified token: not linked.
        let unverified = try Self.signIn(server, try Self.googleToken(subject: "g-owner", email: owner.email, verified: false))
        #expect(unverified.status == 409 && unverified.code == "account_exists", "\(unverified.text)")
        #expect(try Self.count(server, "SELECT count(*)::int8 FROM identities") == 0)
        // Both verified: linked, the owner's account signs in, the address is told.
        let linked = try Self.signIn(server, try Self.googleToken(subject: "g-owner", email: owner.email))
        #expect(linked.status == 200, "\(linked.text)")
        #expect(linked.json["user"]?["id"]?.stringValue == owner.id)
        try Self.waitForMails(server, subject: "A new way to sign in to", count: 1)

        // Another account links Apple-less Google from its session; then that identity signs it in.
        let other = try server.register()
        try server.verifyAddress(other)
        let token = try Self.googleToken(subject: "g-other", email: server.uniqueEmail("elsewhere"))
        server.remember(token: token)
        let added = try server.call("POST", "/users/me/identities", token: other.token, json: #"{"provider": "google", "idToken": "\#(token)"}"#)
        #expect(added.status == 201, "\(added.text)")
        // Each call with a token of its own: an accepted token is used up.
        func another() throws -> String {
            let token = try Self.googleToken(subject: "g-other", email: nil)
            server.remember(token: token)
            return token
        }
        let reused = try server.call("POST", "/users/me/identities", token: other.token, json: #"{"provider": "google", "idToken": "\#(token)"}"#)
        #expect(reused.status == 422 && reused.code == "invalid_id_token", "the same token again: \(reused.text)")
        let again = try server.call(
            "POST", "/users/me/identities", token: other.token, json: #"{"provider": "google", "idToken": "\#(try another())"}"#)
        #expect(again.status == 200, "linking the same identity again changes nothing: \(again.text)")
        let taken = try server.call(
            "POST", "/users/me/identities", token: owner.token, json: #"{"provider": "google", "idToken": "\#(try another())"}"#)
        #expect(taken.status == 409 && taken.code == "identity_taken", "\(taken.text)")
        let byIdentity = try Self.signIn(server, try another())
        #expect(byIdentity.json["user"]?["id"]?.stringValue == other.id)
        let unknownProvider = try server.call(
            "POST", "/users/me/identities", token: other.token, json: #"{"provider": "apple", "idToken": "\#(token)"}"#)
        #expect(unknownProvider.status == 404, "Apple is off here: \(unknownProvider.text)")
    }

    /// A linked identity's notice carries a link (to the verified address) that removes it and
    /// ends every session of the user: once, whichever of two clients racing with it comes
    /// first; a used, unknown or malformed link is `422 invalid_token`. Only the link's hash is kept.
    @Test func theNoticeOfALinkedIdentityRemovesItAndEndsEverySession() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let server = try Self.server("idp_remove_link", provider)
        defer { Self.finish(server) }
        let owner = try server.register(extra: #", "firstname": "Ayu""#)
        try server.verifyAddress(owner)
        let second = try server.newSession(owner)
        let token = try Self.googleToken(subject: "g-planted", email: server.uniqueEmail("planted"))
        server.remember(token: token)
        let linked = try server.call("POST", "/users/me/identities", token: owner.token, json: #"{"provider": "google", "idToken": "\#(token)"}"#)
        #expect(linked.status == 201, "\(linked.text)")
        let notice = try #require(try PasskeysAPITests.mails(server, subject: "A new way to sign in to").first)
        let flat = notice.replacingOccurrences(of: "=\r\n", with: "").replacingOccurrences(of: "=3D", with: "=")
        #expect(flat.contains("/remove-sign-in-method#token="), "\(flat.prefix(1500))")
        #expect(flat.contains("Hi Ayu"), "a verified address is greeted by name")
        let link = try RecoveryAPITests.token(in: notice)
        server.remember(token: link)
        let stored = try server.withDatabase { connection in
            try connection.query(
                "SELECT token_hash, target_kind FROM account_tokens WHERE user_id = \(owner.id)::uuid AND purpose = 'sign_in_method_removal'"
            ).map { (try $0.decode([UInt8].self, at: 0), try $0.decode(String.self, at: 1)) }
        }
        #expect(stored.count == 1 && stored.first?.0 == SHA256.hash(Array(link.utf8)) && stored.first?.1 == "identity")

        for bad in ["not-a-token", String(repeating: "A", count: 43)] {
            let refused = try server.call("POST", "/users/sign-in-methods/remove", json: #"{"token": "\#(bad)"}"#)
            #expect(refused.status == 422 && refused.code == "invalid_token" && refused.json["errors"]?[0]?["field"] == "token", "\(refused.text)")
        }
        #expect(try server.me(owner.token).status == 200, "a refused link changes nothing")
        let statuses = Mutex<[Int]>([])
        let barrier = Barrier(2)
        try onThreads(2) { _ in
            try barrier.arrive()
            let status = try server.call("POST", "/users/sign-in-methods/remove", json: #"{"token": "\#(link)"}"#).status
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0.sorted() } == [200, 422])
        #expect(try Self.count(server, "SELECT count(*)::int8 FROM identities WHERE user_id = \(owner.id)::uuid") == 0)
        #expect(try server.me(owner.token).status == 401, "every session ended")
        #expect(try server.me(second).status == 401, "every session ended")
        let again = try server.call("POST", "/users/sign-in-methods/remove", json: #"{"token": "\#(link)"}"#)
        #expect(again.status == 422 && again.code == "invalid_token", "\(again.text)")
        // The account's owner signs in again and sees what happened.
        let back = try server.newSession(owner)
        let events = try server.call("GET", "/users/me/activity", token: back).json["events"]?.arrayValue ?? []
        #expect(events.contains { $0["type"] == "identity_unlinked" }, "\(events)")
    }

    /// Never the last way in: an account without a password keeps its only identity; with two, or
    /// with a password, one goes (and the address is told). Two removals racing leave one.
    @Test func theLastWayInStays() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let server = try Self.server("idp_unlink", provider, apple: true)
        defer { Self.finish(server) }
        let email = server.uniqueEmail("unlink")
        let session = try Self.signIn(server, try Self.googleToken(subject: "g-unlink", email: email))
        let token = try #require(session.json["accessToken"]?.stringValue)
        func identities() throws -> [JSONValue] {
            try server.call("GET", "/users/me/identities", token: token).json["identities"]?.arrayValue ?? []
        }
        let only = try #require(identities().first?["id"]?.stringValue)
        let refused = try server.call("DELETE", "/users/me/identities/\(only)", token: token)
        #expect(refused.status == 409 && refused.code == "last_sign_in_method", "\(refused.text)")
        let appleClaims = TestSigningKeys.claims(
            issuer: Self.apple, audience: Self.appleClient, subject: "a-unlink", extra: ["email": jsonString(email), "email_verified": "true"])
        let appleToken = try TestSigningKeys.shared().token(appleClaims)
        server.remember(token: appleToken)
        let added = try server.call("POST", "/users/me/identities", token: token, json: #"{"provider": "apple", "idToken": "\#(appleToken)"}"#)
        #expect(added.status == 201, "\(added.text)")
        let both = try identities().compactMap { $0["id"]?.stringValue }
        #expect(both.count == 2)
        // Both at once: the user's row is locked first, so one goes and one stays.
        let statuses = Mutex<[Int]>([])
        try onThreads(both.count) { index in
            let reply = try server.call("DELETE", "/users/me/identities/\(both[index])", token: token)
            statuses.withLock { $0.append(reply.status) }
        }
        #expect(statuses.withLock { $0.sorted() } == [204, 409])
        #expect(try identities().count == 1)
        #expect(try server.call("DELETE", "/users/me/identities/\(UUID().uuidString)", token: token).status == 404)
        try Self.waitForMails(server, subject: "A way to sign in to", count: 1)

        // With a password, the only identity may go.
        let withPassword = try server.register()
        try server.verifyAddress(withPassword)
        let linkToken = try Self.googleToken(subject: "g-pw", email: server.uniqueEmail())
        server.remember(token: linkToken)
        let linked = try server.call(
            "POST", "/users/me/identities", token: withPassword.token, json: #"{"provider": "google", "idToken": "\#(linkToken)"}"#)
        let id = try #require(linked.json["id"]?.stringValue)
        #expect(try server.call("DELETE", "/users/me/identities/\(id)", token: withPassword.token).status == 204)
        let listed = try server.call("GET", "/users/me/identities", token: withPassword.token)
        #expect(listed.json["identities"]?.arrayValue?.count == 0 && listed.json["hasPassword"]?.boolValue == true)
    }

    /// Eight first sign-ins of one new identity at once: one account, one identity, eight sessions.
    @Test func racingFirstSignInsMakeOneAccount() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let server = try Self.server("idp_race", provider)
        defer { Self.finish(server) }
        let email = server.uniqueEmail("race")
        // Eight tokens of the identity (one token signs in once).
        let tokens = try (0..<8).map { _ in try Self.googleToken(subject: "g-race", email: email) }
        let users = Mutex<[String]>([])
        try onThreads(8) { index in
            let reply = try Self.signIn(server, tokens[index])
            guard reply.status == 200, let id = reply.json["user"]?["id"]?.stringValue else {
                throw TestFailure("\(reply.status) \(reply.text)")
            }
            users.withLock { $0.append(id) }
        }
        #expect(Set(users.withLock { $0 }).count == 1)
        #expect(try Self.count(server, "SELECT count(*)::int8 FROM users") == 1)
        #expect(try Self.count(server, "SELECT count(*)::int8 FROM identities") == 1)
        #expect(try Self.count(server, "SELECT count(*)::int8 FROM sessions") == 8)
    }

    /// Forged tokens count against the client address like wrong passwords: past the limit, `429`
    /// before any check, and a good token too waits.
    @Test func forgedTokensAreThrottledPerAddress() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let server = try Self.server("idp_throttle", provider) {
            $0.accounts.signInPerAddress = ThrottleRule(limit: 3, windowSeconds: 900)
        }
        defer { Self.finish(server) }
        let forged = try TestSigningKeys.shared().token(
            TestSigningKeys.claims(issuer: Self.google, audience: Self.googleClient, subject: "g-t"), keyID: "key-2", headerKeyID: "key-1")
        for _ in 0..<3 { #expect(try Self.signIn(server, forged).status == 401) }
        let limited = try Self.signIn(server, forged)
        #expect(limited.status == 429 && limited.header("Retry-After") != nil, "\(limited.text)")
        #expect(try Self.signIn(server, try Self.googleToken(subject: "g-t", email: server.uniqueEmail())).status == 429)
    }
}
