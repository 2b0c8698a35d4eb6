import API
import Accounts
import Foundation
import JSON
import Postgres
import Synchronization
import TestSupport
import Testing

/// The second factor end to end: enrolment, sign-in in two steps, recovery codes, replays and
/// races, the step-up, a reset that cannot bypass it, and limits that never lock the owner out
/// of the other ways in. Codes are computed by a second implementation (Python's `hmac`), at the
/// server's clock.
@Suite(.testThreads, .serialized)
struct SecondFactorAPITests {
    /// The TOTP code of `secret` (base32) at `time`, by a second implementation (`totpCode`).
    static func code(_ secret: String, at time: Date) throws -> String {
        try totpCode(secret: secret, at: time)
    }

    /// A registered user with a verified address and the second factor on: their account, the
    /// secret, and the recovery codes.
    static func enrolled(_ server: TestServer) throws -> (TestServer.Account, String, [String]) {
        let account = try server.register(extra: #", "firstname": "Ayu""#)
        try server.verifyAddress(account)
        let started = try server.call("POST", "/users/me/mfa/totp", token: account.token)
        try #require(started.status == 200, "\(started.text)")
        let secret = try #require(started.json["secret"]?.stringValue)
        server.remember(token: secret)
        let first = try code(secret, at: server.clock.now())
        let confirmed = try server.call("POST", "/users/me/mfa/totp/confirm", token: account.token, json: #"{"code": "\#(first)"}"#)
        try #require(confirmed.status == 200, "\(confirmed.text)")
        let codes = confirmed.json["recoveryCodes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        try #require(codes.count == 10)
        codes.forEach { server.remember(token: $0) }
        return (account, secret, codes)
    }

    /// `POST /users/signin` with the right password: `401 mfa_required` and its token.
    static func firstFactor(_ server: TestServer, _ account: TestServer.Account, sourceLocation: SourceLocation = #_sourceLocation) throws
        -> String
    {
        let reply = try server.signIn(account.email, account.password)
        try #require(reply.status == 401 && reply.code == "mfa_required", "\(reply.text)", sourceLocation: sourceLocation)
        #expect(reply.json["factors"] == .array(["totp", "recovery_code"]), sourceLocation: sourceLocation)
        let token = try #require(reply.json["mfaToken"]?.stringValue, sourceLocation: sourceLocation)
        server.remember(token: token)
        return token
    }

    static func finish(_ server: TestServer, _ token: String, _ code: String) throws -> Reply {
        let reply = try server.call("POST", "/users/signin/mfa", json: #"{"mfaToken": "\#(token)", "code": "\#(code)"}"#)
        if let session = reply.json["accessToken"]?.stringValue { server.remember(token: session) }
        return reply
    }

    static func sessionCount(_ server: TestServer, _ account: TestServer.Account) throws -> Int {
        try server.withDatabase { try $0.query("SELECT count(*)::int8 FROM sessions WHERE user_id = \(account.id)::uuid")[0].decode(Int.self, at: 0) }
    }

    @Test func enrolmentThenSignInWithACodeOrARecoveryCodeOnce() throws {
        let server = try TestServer("mfa_flow")
        defer { server.shutdown() }
        let account = try server.register(extra: #", "firstname": "Ayu""#)
        try server.verifyAddress(account)
        let off = try server.call("GET", "/users/me/mfa", token: account.token)
        #expect(off.status == 200 && off.json["totp"]?["enabled"] == false && off.json["recoveryCodesLeft"] == 0, "\(off.text)")
        let started = try server.call("POST", "/users/me/mfa/totp", token: account.token)
        #expect(started.status == 200, "\(started.text)")
        let secret = try #require(started.json["secret"]?.stringValue)
        server.remember(token: secret)
        #expect(secret.count == 32, "160 bits in base32")
        #expect(started.json["otpauthUri"]?.stringValue?.hasPrefix("otpauth://totp/") == true)
        #expect(started.json["otpauthUri"]?.stringValue?.contains("secret=\(secret)") == true)
        #expect(started.json["qrCodeSvg"]?.stringValue?.hasPrefix("<svg") == true)
        #expect(try server.call("GET", "/users/me/mfa", token: account.token).json["totp"]?["enabled"] == false, "not on until confirmed")
        let wrong = try server.call("POST", "/users/me/mfa/totp/confirm", token: account.token, json: #"{"code": "000000"}"#)
        #expect(wrong.status == 422 && wrong.code == "invalid_code", "\(wrong.text)")
        let firstCode = try Self.code(secret, at: server.clock.now())
        let confirmed = try server.call("POST", "/users/me/mfa/totp/confirm", token: account.token, json: #"{"code": "\#(firstCode)"}"#)
        #expect(confirmed.status == 200, "\(confirmed.text)")
        let codes = confirmed.json["recoveryCodes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        codes.forEach { server.remember(token: $0) }
        #expect(codes.count == 10 && Set(codes).count == 10)
        #expect(codes.allSatisfy { $0.count == 19 && $0.split(separator: "-").count == 4 }, "\(codes)")
        #expect(try server.call("POST", "/users/me/mfa/totp", token: account.token).code == "already_enabled")
        let on = try server.call("GET", "/users/me/sign-in-methods", token: account.token)
        #expect(on.json["mfa"]?["totp"]?["enabled"] == true && on.json["mfa"]?["recoveryCodesLeft"] == 10, "\(on.text)")
        // Only the codes' hashes are kept.
        let hashes = try server.withDatabase { try $0.query("SELECT code_hash FROM mfa_recovery_codes").map { try $0.decode([UInt8].self, at: 0) } }
        #expect(hashes.count == 10 && !hashes.contains { codes.map { Array($0.utf8) }.contains($0) })

        // The password proves one factor: no session, a challenge.
        let sessions = try Self.sessionCount(server, account)
        let token = try Self.firstFactor(server, account)
        #expect(try Self.sessionCount(server, account) == sessions)
        // The enrolment's code was used for its step: a replay.
        #expect(try Self.finish(server, token, firstCode).code == "invalid_code")
        server.advanceClock(by: 30)
        let nextCode = try Self.code(secret, at: server.clock.now())
        let signedIn = try Self.finish(server, token, nextCode)
        #expect(signedIn.status == 200 && signedIn.json["accessToken"]?.stringValue != nil, "\(signedIn.text)")
        #expect(try Self.finish(server, token, nextCode).code == "invalid_mfa_token", "the token is spent")
        let again = try Self.firstFactor(server, account)
        #expect(try Self.finish(server, again, nextCode).code == "invalid_code", "a code works once")
        let recovered = try Self.finish(server, again, codes[3].uppercased())
        #expect(recovered.status == 200, "a recovery code, in any case: \(recovered.text)")
        #expect(try Self.finish(server, try Self.firstFactor(server, account), codes[3]).code == "invalid_code", "a recovery code works once")
        #expect(try server.call("GET", "/users/me/mfa", token: account.token).json["recoveryCodesLeft"] == 9)
        let events = try server.call("GET", "/users/me/activity", token: account.token).json["events"]?.arrayValue ?? []
        let kinds = events.compactMap { $0["type"]?.stringValue }
        #expect(kinds.contains("mfa_enabled") && kinds.contains("recovery_code_used") && kinds.contains("mfa_failed"), "\(kinds)")
        #expect(events.filter { $0["type"] == "signed_in" }.count == 2, "two sign-ins finished")
        _ = try PasskeysAPITests.mails(server, subject: "Two-step verification of your")
    }

    /// Five wrong codes end a challenge; twenty per user in 15 minutes stop the codes (429) but
    /// not the password's first step, nor another way in.
    @Test func wrongCodesEndTheChallengeAndAreLimitedPerUser() throws {
        let server = try TestServer("mfa_limits")
        defer { server.shutdown() }
        let (account, secret, _) = try Self.enrolled(server)
        let token = try Self.firstFactor(server, account)
        for attempt in 1...4 { #expect(try Self.finish(server, token, "11111\(attempt)").code == "invalid_code") }
        #expect(try Self.finish(server, token, "111115").code == "invalid_mfa_token", "the fifth ends it")
        server.advanceClock(by: 30)
        #expect(try Self.finish(server, token, try Self.code(secret, at: server.clock.now())).code == "invalid_mfa_token")
        // An ended or abandoned challenge goes with the housekeeping once expired.
        _ = try Self.firstFactor(server, account)
        server.advanceClock(by: 301)
        // A round of this process's own housekeeping may hold the lock a moment (nil): run once more.
        try waitUntil(timeout: .seconds(10), "a housekeeping round") { try server.app.accounts.housekeeping.runOnce() != nil }
        let challenges = try server.withDatabase { try $0.query("SELECT count(*)::int8 FROM mfa_challenges")[0].decode(Int.self, at: 0) }
        #expect(challenges == 0)
        var statuses: [Int] = []
        for round in 0..<4 {
            let next = try Self.firstFactor(server, account)
            for attempt in 0..<4 { statuses.append(try Self.finish(server, next, "22\(round)22\(attempt)").status) }
        }
        #expect(statuses.filter { $0 == 401 }.count == 15 && statuses.suffix(1) == [429], "\(statuses)")
        let locked = try Self.firstFactor(server, account)
        #expect(try Self.finish(server, locked, try Self.code(secret, at: server.clock.now())).status == 429)
        #expect(try server.me(account.token).status == 200, "the sessions stay")
    }

    @Test func twoSignInsRacingWithOneCodeOneWins() throws {
        let server = try TestServer("mfa_race")
        defer { server.shutdown() }
        let (account, secret, _) = try Self.enrolled(server)
        server.advanceClock(by: 30)
        let tokens = [try Self.firstFactor(server, account), try Self.firstFactor(server, account)]
        let code = try Self.code(secret, at: server.clock.now())
        let barrier = Barrier(2)
        let statuses = Mutex<[Int]>([])
        try onThreads(2) { index in
            try barrier.arrive()
            let status = try Self.finish(server, tokens[index], code).status
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0.sorted() } == [200, 401])
    }

    /// While the factor is on, a recent authentication counts only with both factors: a session
    /// that signed in before it was turned on must prove a code; a reauthentication needs one.
    @Test func theStepUpNeedsBothFactors() throws {
        let server = try TestServer("mfa_step_up")
        defer { server.shutdown() }
        let account = try server.register()
        try server.verifyAddress(account)
        let earlier = try server.newSession(account)
        let started = try server.call("POST", "/users/me/mfa/totp", token: account.token)
        let secret = try #require(started.json["secret"]?.stringValue)
        server.remember(token: secret)
        let enabled = try server.call(
            "POST", "/users/me/mfa/totp/confirm", token: account.token, json: #"{"code": "\#(try Self.code(secret, at: server.clock.now()))"}"#)
        #expect(enabled.status == 200)
        enabled.json["recoveryCodes"]?.arrayValue?.compactMap(\.stringValue).forEach { server.remember(token: $0) }
        // Signed in a moment ago, but with one factor.
        let early = try server.call("POST", "/users/me/mfa/recovery-codes", token: earlier)
        #expect(early.status == 403 && early.code == "reauthentication_required", "\(early.text)")
        let regenerated = try server.call("POST", "/users/me/mfa/recovery-codes", token: account.token)
        #expect(regenerated.status == 200, "the enrolling session proved both: \(regenerated.text)")
        regenerated.json["recoveryCodes"]?.arrayValue?.compactMap(\.stringValue).forEach { server.remember(token: $0) }
        server.advanceClock(by: 301)
        #expect(try server.call("DELETE", "/users/me/mfa/totp", token: account.token).code == "reauthentication_required")
        let passwordOnly = try server.call("POST", "/users/me/reauthenticate", token: account.token, json: #"{"password": "\#(account.password)"}"#)
        #expect(passwordOnly.status == 422 && passwordOnly.firstError.field == "totp", "\(passwordOnly.text)")
        let code = try Self.code(secret, at: server.clock.now())
        let proved = try server.call(
            "POST", "/users/me/reauthenticate", token: account.token, json: #"{"password": "\#(account.password)", "totp": "\#(code)"}"#)
        #expect(proved.status == 200, "\(proved.text)")
        #expect(try server.call("DELETE", "/users/me/mfa/totp", token: account.token).status == 204)
        #expect(try server.signIn(account.email, account.password).status == 200, "one factor again")
        #expect(try server.call("GET", "/users/me/mfa", token: account.token).json["totp"]?["enabled"] == false)
    }

    /// A reset's link proves one factor: nothing changes until a code finishes it, and then the
    /// new password is the account's.
    @Test func aResetDoesNotBypassTheSecondFactor() throws {
        let server = try TestServer("mfa_reset")
        defer { server.shutdown() }
        let (account, secret, _) = try Self.enrolled(server)
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        let mail = try #require(try PasskeysAPITests.mails(server, subject: "Reset your").first)
        let link = try RecoveryAPITests.token(in: mail)
        server.remember(token: link)
        let newPassword = server.uniquePassword("reset")
        let confirmed = try server.call("POST", "/users/password-reset/confirm", json: #"{"token": "\#(link)", "newPassword": "\#(newPassword)"}"#)
        #expect(confirmed.status == 401 && confirmed.code == "mfa_required", "\(confirmed.text)")
        let token = try #require(confirmed.json["mfaToken"]?.stringValue)
        server.remember(token: token)
        #expect(try server.signIn(account.email, newPassword).code == "invalid_credentials", "not applied before the code")
        #expect(try server.me(account.token).status == 200, "and no session ended yet")
        server.advanceClock(by: 30)
        let finished = try Self.finish(server, token, try Self.code(secret, at: server.clock.now()))
        #expect(finished.status == 200, "\(finished.text)")
        #expect(try server.me(account.token).status == 401, "the reset ended the other sessions")
        #expect(try server.signIn(account.email, account.password).code == "invalid_credentials")
        #expect(try server.signIn(account.email, newPassword).code == "mfa_required")
    }

    // MARK: - Administrators

    static func admin(_ server: TestServer, _ method: String, _ target: String, _ token: String, json: String? = nil) throws -> Reply {
        var headers = [("Authorization", "Bearer \(token)")]
        if json != nil { headers.append(("Content-Type", "application/json")) }
        return try server.send(method, target, headers: headers, body: json.map { Array($0.utf8) })
    }

    /// `--admin-mfa required`: an administrator without a second factor may only turn one on;
    /// with it on, the sign-in takes a code (or a recovery code); `exosphere admin reset-mfa`
    /// turns it off; and an administrator turns a user's off (audited, the user told).
    @Test func administratorsEnrolAndSignInWithTheSecondFactor() throws {
        let server = try TestServer("mfa_admins") { $0.accounts.adminSecondFactorRequired = true }
        defer { server.shutdown() }
        let password = AdminAPITests.adminPassword
        _ = try server.app.accounts.administrators.createAdmin(email: "root@example.com", password: password)
        let token = try AdminAPITests.signInAdmin(server, email: "root@example.com")
        let held = try Self.admin(server, "GET", "/admin/users", token)
        #expect(held.status == 403 && held.code == "mfa_enrolment_required", "\(held.text)")
        #expect(try Self.admin(server, "GET", "/admin/me/mfa", token).json["required"] == true)
        let started = try Self.admin(server, "POST", "/admin/me/mfa/totp", token)
        #expect(started.status == 200, "\(started.text)")
        let secret = try #require(started.json["secret"]?.stringValue)
        server.remember(token: secret)
        let first = try Self.code(secret, at: server.clock.now())
        let confirmed = try Self.admin(server, "POST", "/admin/me/mfa/totp/confirm", token, json: #"{"code": "\#(first)"}"#)
        #expect(confirmed.status == 200, "\(confirmed.text)")
        let codes = confirmed.json["recoveryCodes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        codes.forEach { server.remember(token: $0) }
        #expect(codes.count == 10)
        #expect(try Self.admin(server, "GET", "/admin/users", token).status == 200, "on now: the console opens")

        // The next sign-in takes a code.
        let signIn = try server.call("POST", "/admin/signin", json: #"{"email": "root@example.com", "password": "\#(password)"}"#)
        #expect(signIn.status == 401 && signIn.code == "mfa_required", "\(signIn.text)")
        let mfaToken = try #require(signIn.json["mfaToken"]?.stringValue)
        server.remember(token: mfaToken)
        let wrong = try server.call("POST", "/admin/signin/mfa", json: #"{"mfaToken": "\#(mfaToken)", "code": "000000"}"#)
        #expect(wrong.status == 401 && wrong.code == "invalid_code", "\(wrong.text)")
        let finished = try server.call("POST", "/admin/signin/mfa", json: #"{"mfaToken": "\#(mfaToken)", "code": "\#(codes[0])"}"#)
        #expect(finished.status == 200, "\(finished.text)")
        let second = try #require(finished.json["accessToken"]?.stringValue)
        server.remember(token: second)
        #expect(try Self.admin(server, "GET", "/admin/users", second).status == 200)

        // A user's factor, turned off by an administrator: audited, and the user is told.
        let (user, _, _) = try Self.enrolled(server)
        #expect(try Self.admin(server, "DELETE", "/admin/users/\(user.id)/mfa", second).status == 204)
        #expect(try Self.admin(server, "DELETE", "/admin/users/\(user.id)/mfa", second).status == 404)
        #expect(try server.signIn(user.email, user.password).status == 200, "one factor again")
        let audit = try Self.admin(server, "GET", "/admin/audit?limit=50", second).json["entries"]?.arrayValue ?? []
        let actions = audit.compactMap { $0["action"]?.stringValue }
        #expect(actions.contains("user.mfa.reset") && actions.contains("admin.mfa_enabled"), "\(actions)")
        // The enrolment's notice has the same subject: waiting for any would not wait for this one.
        _ = try PasskeysAPITests.mails(
            server, subject: "Two-step verification of your", containing: "An administrator turned two-step verification off")

        // On the server's machine: the administrator's factor off (audited as the command).
        let binary = try #require(TestImages.exosphereExecutable())
        let reset = try run(
            binary, ["admin", "reset-mfa", "--email", "root@example.com", "--database-url", server.databaseURL, "--log-level", "warning"])
        #expect(reset.contains("second factor off for root@example.com"), "\(reset)")
        let commands = try server.withDatabase {
            try $0.query("SELECT count(*)::int8 FROM admin_audit WHERE action = 'cli.admin.reset_mfa root@example.com'")[0].decode(Int.self, at: 0)
        }
        #expect(commands == 1)
        let plain = try server.call("POST", "/admin/signin", json: #"{"email": "root@example.com", "password": "\#(password)"}"#)
        #expect(plain.status == 200, "\(plain.text)")
        if let plainToken = plain.json["accessToken"]?.stringValue {
            server.remember(token: plainToken)
            #expect(try Self.admin(server, "GET", "/admin/users", plainToken).code == "mfa_enrolment_required", "required again")
        }
    }
}
