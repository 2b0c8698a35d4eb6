import API
import Accounts
import Foundation
import Glibc
import JSON
import Mail
import Postgres
import Synchronization
import TestSupport
import Testing

/// Password reset, email verification, notices and activity, end to end: a real server sending
/// through a real SMTP server (aiosmtpd) that the test starts, the mails read back from it.
@Suite(.testThreads, .serialized)
struct RecoveryAPITests {
    /// A server whose mail goes to `smtp`; `adjust` tunes it further.
    static func server(
        _ name: String, smtp: TestSMTPServer, sharingDatabaseWith sibling: TestServer? = nil,
        _ adjust: @escaping (inout Configuration) throws -> Void = { _ in }
    ) throws -> TestServer {
        try TestServer(name, sharingDatabaseWith: sibling) { configuration in
            configuration.mail.transport = .smtp(try SMTPConfiguration(url: "smtp+plain://127.0.0.1:\(smtp.port)"))
            configuration.publicURL = "https://accounts.example.com"
            configuration.mail.appName = "Aplikasi Sehat"
            try adjust(&configuration)
        }
    }

    /// The token of the first link in a mail (`#token=…`), quoted-printable or not.
    static func token(in message: String) throws -> String {
        let text = message.replacingOccurrences(of: "=\r\n", with: "").replacingOccurrences(of: "=3D", with: "=")
        guard let range = text.range(of: "#token=") else { throw TestFailure("no link in the mail: \(message.prefix(2000))") }
        return String(text[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }

    static func isTo(_ address: String) -> (String) -> Bool {
        { message in
            message.components(separatedBy: "\r\n").contains {
                $0.lowercased() == "to: \(address)".lowercased() || $0.lowercased() == "to: <\(address)>".lowercased()
            }
        }
    }

    static func subject(_ message: String) -> String {
        message.components(separatedBy: "\r\n").first { $0.hasPrefix("Subject: ") }.map { String($0.dropFirst(9)) } ?? ""
    }

    // MARK: - Verification

    @Test func registrationMailsAVerificationLinkThatWorksOnce() throws {
        let smtp = try TestSMTPServer()
        let server = try Self.server("verify", smtp: smtp)
        defer { server.shutdown() }
        // A name is text the requester chose: mail to an address not yet proven carries none.
        let account = try server.register(extra: #", "firstname": "Zorblax", "lastname": "Quimby""#)
        #expect(account.user["emailVerified"] == .bool(false))
        let mail = try smtp.waitForMessages(where: Self.isTo(account.email))[0]
        #expect(!mail.contains("Zorblax") && !mail.contains("Quimby"), "\(mail)")
        #expect(mail.contains("https://accounts.example.com/verify-email#token="))
        #expect(mail.contains("Message-ID: <exosphere."))
        #expect(mail.contains("multipart/alternative"))
        let token = try Self.token(in: mail)
        #expect(token.count == 43)
        server.remember(token: token)
        // Only the hash is stored.
        let stored = try server.withDatabase {
            try $0.query("SELECT count(*)::int8 FROM account_tokens WHERE token_hash = \(Array(token.utf8))")[0].decode(Int.self, at: 0)
        }
        #expect(stored == 0)

        let verified = try server.call("POST", "/users/verify-email", json: #"{"token": "\#(token)"}"#)
        #expect(verified.status == 200, "\(verified.text)")
        #expect(verified.json["emailVerified"] == .bool(true))
        #expect(verified.json["id"]?.stringValue == account.id)
        #expect(try server.me(account.token).json["emailVerified"] == .bool(true))

        let again = try server.call("POST", "/users/verify-email", json: #"{"token": "\#(token)"}"#)
        #expect(again.status == 422)
        #expect(again.json["code"] == "invalid_verification_token")
        for bad in ["", "x", String(repeating: "A", count: 43)] {
            #expect(try server.call("POST", "/users/verify-email", json: #"{"token": "\#(bad)"}"#).json["code"] == "invalid_verification_token")
        }
        #expect(try server.call("POST", "/users/verify-email", json: #"{"token": 5}"#).status == 422)
        #expect(try server.call("POST", "/users/verify-email", json: #"{"token": "\#(token)", "x": 1}"#).json["code"] == "unknown_field")

        // Verified: a resend is a conflict.
        let resend = try server.call("POST", "/users/me/verify-email", token: account.token)
        #expect(resend.status == 409)
        #expect(resend.json["code"] == "already_verified")
        #expect(try server.call("POST", "/users/me/verify-email").status == 401)
        let events = try activity(server, account.token)
        #expect(events.contains("email_verified"))
        #expect(server.leaks().isEmpty, "\(server.leaks())")
    }

    @Test func aResendVoidsTheOlderLinkAndIsThrottled() throws {
        let smtp = try TestSMTPServer()
        let server = try Self.server("resend", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register()
        let first = try Self.token(in: try smtp.waitForMessages(where: Self.isTo(account.email))[0])
        let resend = try server.call("POST", "/users/me/verify-email", token: account.token)
        #expect(resend.status == 202, "\(resend.text)")
        #expect(resend.json["status"] == "accepted")
        let mails = try smtp.waitForMessages(count: 2, where: Self.isTo(account.email))
        let second = try Self.token(in: mails[1])
        #expect(first != second)
        #expect(try server.call("POST", "/users/verify-email", json: #"{"token": "\#(first)"}"#).status == 422)
        // 5 an hour: four more, then 429 with Retry-After.
        for _ in 0..<4 { #expect(try server.call("POST", "/users/me/verify-email", token: account.token).status == 202) }
        let throttled = try server.call("POST", "/users/me/verify-email", token: account.token)
        #expect(throttled.status == 429)
        #expect(Int(throttled.header("Retry-After") ?? "") ?? 0 > 0)
        // A link superseded before its mail left is not sent (its mail is dropped rather than sent
        // with a dead link): once the outbox is empty, the last mail holds the newest link.
        try waitUntil(timeout: .seconds(20), "the outbox to be empty") {
            try server.withDatabase { try $0.query("SELECT count(*)::int8 FROM mail_outbox")[0].decode(Int.self, at: 0) == 0 }
        }
        let sent = smtp.messages().filter(Self.isTo(account.email))
        #expect((3...6).contains(sent.count), "\(sent.count) verification mails")
        let newest = try Self.token(in: try #require(sent.last))
        #expect(newest != second)
        #expect(try server.call("POST", "/users/verify-email", json: #"{"token": "\#(second)"}"#).status == 422)
        #expect(try server.call("POST", "/users/verify-email", json: #"{"token": "\#(newest)"}"#).status == 200)
    }

    // MARK: - Password reset

    @Test func aResetSetsThePasswordEndsEverySessionClearsTheThrottlesAndSignsIn() throws {
        let smtp = try TestSMTPServer()
        let server = try Self.server("reset", smtp: smtp) { $0.accounts.signInPerEmailAndAddress = ThrottleRule(limit: 3, windowSeconds: 900) }
        defer { server.shutdown() }
        let account = try server.register()
        let second = try server.newSession(account)
        // Locked out of sign-in, and of the password change.
        for _ in 0..<3 { #expect(try server.signIn(account.email, "wrong-password-1").status == 401) }
        // Refused while locked, three times: one lock-out in the activity, not three.
        for _ in 0..<3 { #expect(try server.signIn(account.email, account.password).status == 429) }
        // Those rows are written after the answers: waited for, so that the reset comes after them.
        try waitUntil(timeout: .seconds(10), "the failed sign-ins' and the lock-out's activity rows") {
            let events = try activity(server, second)
            return events.filter { $0 == "sign_in_failed" }.count == 3 && events.contains("locked_out")
        }

        let accepted = try server.call(
            "POST", "/users/password-reset", json: #"{"email": "\#(account.email.uppercased())"}"#, headers: [("User-Agent", "Phone/1.0")])
        #expect(accepted.status == 202)
        let unknown = try server.call("POST", "/users/password-reset", json: #"{"email": "nobody-\#(UUID().uuidString)@example.com"}"#)
        #expect(unknown.status == 202)
        #expect(unknown.body == accepted.body)
        #expect(unknown.header("Content-Type") == accepted.header("Content-Type"))
        let mail = try smtp.waitForMessages(where: { Self.isTo(account.email)($0) && $0.contains("/reset-password#") })[0]
        #expect(Self.subject(mail).contains("=?UTF-8?") || Self.subject(mail).contains("Aplikasi Sehat"))
        let token = try Self.token(in: mail)
        server.remember(token: token)

        #expect(
            try server.call("POST", "/users/password-reset/confirm", json: #"{"token": "\#(token)", "newPassword": "short"}"#).json["code"]
                == "weak_password")
        let newPassword = server.uniquePassword("reset")
        let confirmed = try server.call(
            "POST", "/users/password-reset/confirm", json: #"{"token": "\#(token)", "newPassword": "\#(newPassword)"}"#)
        #expect(confirmed.status == 200, "\(confirmed.text)")
        let session = try #require(confirmed.json["accessToken"]?.stringValue)
        server.remember(token: session)
        #expect(confirmed.json["user"]?["emailVerified"] == .bool(true))
        #expect(try server.me(session).status == 200)
        for old in [account.token, second] { #expect(try server.me(old).status == 401) }
        #expect(try server.signIn(account.email, account.password).status == 401)
        // That refusal's row is written after its answer: waited for, so that the sign-in comes after it.
        try waitUntil(timeout: .seconds(10), "the old password's refusal in the activity") {
            try activity(server, session).filter { $0 == "sign_in_failed" }.count == 4
        }
        #expect(try server.signIn(account.email, newPassword).status == 200)
        // Used up.
        let reused = try server.call(
            "POST", "/users/password-reset/confirm", json: #"{"token": "\#(token)", "newPassword": "\#(server.uniquePassword())"}"#)
        #expect(reused.status == 422)
        #expect(reused.json["code"] == "invalid_reset_token")
        // The notice.
        let notice = try smtp.waitForMessages(where: { Self.isTo(account.email)($0) && Self.subject($0).contains("password was changed") })
        #expect(!notice.isEmpty)
        let events = try activity(server, session)
        #expect(events.starts(with: ["signed_in", "sign_in_failed", "password_reset", "password_reset_requested"]), "\(events)")
        #expect(events.filter { $0 == "locked_out" }.count == 1, "\(events)")
        #expect(events.contains("sign_in_failed"))
        #expect(server.leaks().isEmpty, "\(server.leaks())")
    }

    /// A reset removes the ways in added while the address was unverified (the database flags them
    /// as they are made), keeps the others, and its answer lists what remains, as
    /// `GET /users/me/sign-in-methods` does.
    @Test func aResetRemovesTheWaysInAddedWhileTheAddressWasUnverified() throws {
        let smtp = try TestSMTPServer()
        let server = try Self.server("reset_ways_in", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register()
        func addIdentity(_ subject: String) throws {
            try server.withDatabase { connection in
                _ = try connection.execute(
                    "INSERT INTO identities (user_id, provider, subject) VALUES (\(account.id)::uuid, 'google', \(subject))")
            }
        }
        // One planted before the mailbox was proved, one after.
        try addIdentity("planted-\(UUID())")
        try server.verifyAddress(account)
        try addIdentity("owners-\(UUID())")
        let before = try server.call("GET", "/users/me/sign-in-methods", token: account.token)
        #expect(before.status == 200 && before.json["identities"]?.arrayValue?.count == 2, "\(before.text)")
        #expect(before.json["password"] == .bool(true) && before.json["passkeys"]?.arrayValue?.isEmpty == true)

        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        let mail = try smtp.waitForMessages(where: { Self.isTo(account.email)($0) && $0.contains("/reset-password#") })[0]
        let token = try Self.token(in: mail)
        server.remember(token: token)
        let confirmed = try server.call(
            "POST", "/users/password-reset/confirm", json: #"{"token": "\#(token)", "newPassword": "\#(server.uniquePassword("reset"))"}"#)
        #expect(confirmed.status == 200, "\(confirmed.text)")
        let remaining = confirmed.json["signInMethods"]?["identities"]?.arrayValue ?? []
        #expect(remaining.count == 1 && confirmed.json["signInMethods"]?["password"] == .bool(true), "\(confirmed.text)")
        let subjects = try server.withDatabase { connection in
            try connection.query("SELECT subject FROM identities WHERE user_id = \(account.id)::uuid").map { try $0.decode(String.self, at: 0) }
        }
        #expect(subjects.count == 1 && subjects.first?.hasPrefix("owners-") == true, "\(subjects)")
    }

    /// Mail to an address its mailbox has not proved carries no text the account's registrant
    /// chose (who may be a stranger to that mailbox): the reset, the password-change and the
    /// export notices greet the address itself. Once the address is verified, the name is used.
    @Test func mailToAnUnverifiedAddressCarriesNoTextTheRegistrantChose() throws {
        let smtp = try TestSMTPServer()
        let server = try Self.server("unverified_text", smtp: smtp)
        defer { server.shutdown() }
        let chosen = "Visit evil example"
        var account = try server.register(extra: #", "firstname": "\#(chosen)""#)
        func flat(_ message: String) -> String { message.replacingOccurrences(of: "=\r\n", with: "") }
        func mail(_ containing: String, count: Int = 1) throws -> String {
            flat(try smtp.waitForMessages(count: count, where: { Self.isTo(account.email)($0) && flat($0).contains(containing) })[count - 1])
        }
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        let reset = try mail("/reset-password#")
        #expect(try server.call("GET", "/users/me/export", token: account.token).status == 200)
        let exported = try mail("was just downloaded")
        let newPassword = server.uniquePassword("changed")
        let changed = try server.call(
            "POST", "/users/me/password", token: account.token,
            json: #"{"oldPassword": "\#(account.password)", "newPassword": "\#(newPassword)"}"#)
        #expect(changed.status == 200, "\(changed.text)")
        if let token = changed.json["accessToken"]?.stringValue { account.token = token }
        account.password = newPassword
        let passwordNotice = try mail("was just changed")
        for message in [reset, exported, passwordNotice] {
            #expect(!message.contains(chosen), "\(message.prefix(1200))")
            #expect(message.contains("Hi \(account.email)"), "greets the address: \(message.prefix(1200))")
        }
        try server.verifyAddress(account)
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        #expect(try mail("/reset-password#", count: 2).contains("Hi \(chosen)"), "a verified address is greeted by name")
    }

    @Test func aNewerRequestOrAPasswordChangeVoidsTheOlderLinks() throws {
        let smtp = try TestSMTPServer()
        let server = try Self.server("supersede", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register()
        var links: [String] = []
        for count in 1...2 {
            #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
            links = try smtp.waitForMessages(count: count, where: { $0.contains("/reset-password#") }).map(Self.token(in:))
        }
        let password = server.uniquePassword()
        #expect(
            try server.call("POST", "/users/password-reset/confirm", json: #"{"token": "\#(links[0])", "newPassword": "\#(password)"}"#).status == 422
        )
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        let third = try Self.token(in: try smtp.waitForMessages(count: 3, where: { $0.contains("/reset-password#") })[2])
        let changed = try server.call(
            "POST", "/users/me/password", token: account.token,
            json: #"{"oldPassword": "\#(account.password)", "newPassword": "\#(password)"}"#)
        #expect(changed.status == 200)
        if let token = changed.json["accessToken"]?.stringValue { server.remember(token: token) }
        for link in [links[1], third] {
            #expect(
                try server.call(
                    "POST", "/users/password-reset/confirm", json: #"{"token": "\#(link)", "newPassword": "\#(server.uniquePassword())"}"#
                ).status == 422)
        }
        #expect(!(try smtp.waitForMessages(where: { Self.subject($0).contains("password was changed") })).isEmpty)
    }

    @Test func resetRequestsAreThrottledPerEmailUnderConcurrency() throws {
        let smtp = try TestSMTPServer()
        let server = try Self.server("resetthrottle", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register()
        let statuses = Mutex<[Int]>([])
        let barrier = Barrier(20)
        try onThreads(20) { _ in
            try barrier.arrive()
            let status = try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status
            statuses.withLock { $0.append(status) }
        }
        let all = statuses.withLock { $0 }
        #expect(all.filter { $0 == 202 }.count == 5, "\(all)")
        #expect(all.filter { $0 == 429 }.count == 15, "\(all)")
        // Only the newest of the five tokens is live (once the queued requests are resolved).
        try server.app.accounts.recovery.resolvePasswordResets()
        let live = try server.withDatabase {
            try $0.query("SELECT count(*)::int8 FROM account_tokens WHERE purpose = 'password_reset' AND user_id = \(UUID(uuidString: account.id)!)")[
                0
            ].decode(Int.self, at: 0)
        }
        #expect(live == 1)
        // An unknown address is throttled the same way: a 429 tells nothing.
        let unknown = "ghost-\(UUID().uuidString)@example.com"
        let answers = try (0..<6).map { _ in try server.call("POST", "/users/password-reset", json: #"{"email": "\#(unknown)"}"#).status }
        #expect(answers == [202, 202, 202, 202, 202, 429])
    }

    @Test func oneTokenSentManyTimesAtOnceResetsOnce() throws {
        let smtp = try TestSMTPServer()
        // Eleven losing passwords are tried below: more than the sign-in throttle's ten.
        let server = try Self.server("resetrace", smtp: smtp) { $0.accounts.signInPerEmailAndAddress = ThrottleRule(limit: 100, windowSeconds: 900) }
        defer { server.shutdown() }
        let account = try server.register()
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        let token = try Self.token(in: try smtp.waitForMessages(where: { $0.contains("/reset-password#") })[0])
        let results = Mutex<[(Int, String)]>([])
        let barrier = Barrier(12)
        let passwords = (0..<12).map { server.uniquePassword("race\($0)") }
        try onThreads(12) { index in
            try barrier.arrive()
            let reply = try server.call(
                "POST", "/users/password-reset/confirm", json: #"{"token": "\#(token)", "newPassword": "\#(passwords[index])"}"#)
            results.withLock { $0.append((reply.status, passwords[index])) }
        }
        let all = results.withLock { $0 }
        let winners = all.filter { $0.0 == 200 }
        #expect(winners.count == 1, "\(all.map(\.0))")
        #expect(all.filter { $0.0 == 422 }.count == 11)
        // The winner's password is the one that works.
        for (status, password) in all {
            let signIn = try server.signIn(account.email, password).status
            #expect(signIn == (status == 200 ? 200 : 401), "a password whose reset answered \(status) signs in with \(signIn)")
        }
    }

    @Test func aResetRequestTakesTheSameTimeForARegisteredAndAnUnknownAddress() throws {
        // The dev mailbox, not the SMTP server: the test measures the request, and aiosmtpd's work
        // on the mails of registered addresses would only add noise to the machine.
        let server = try TestServer("resettiming") {
            // Counted as in production (a write on both paths), but never full.
            $0.accounts.resetRequestsPerEmail = ThrottleRule(limit: 1_000_000, windowSeconds: 3600)
            $0.accounts.resetRequestsPerAddress = ThrottleRule(limit: 1_000_000, windowSeconds: 3600)
        }
        defer { server.shutdown() }
        let account = try server.register()
        let unknown = "nobody-\(UUID().uuidString)@example.com"
        func time(_ email: String) throws -> Double {
            let start = ContinuousClock.now
            let reply = try server.call("POST", "/users/password-reset", json: #"{"email": "\#(email)"}"#)
            let elapsed = ContinuousClock.now - start
            guard reply.status == 202 else { throw TestFailure("\(reply.status) \(reply.text)") }
            return elapsed.inSeconds
        }
        let relative = try relativeTimingDifference("reset request", registered: account.email, unknown: unknown, time)
        #expect(abs(relative) < 0.10, "registered − unknown: \(relative * 100) % of one request")
    }

    // MARK: - Activity

    func activity(_ server: TestServer, _ token: String) throws -> [String] {
        let reply = try server.call("GET", "/users/me/activity?limit=100", token: token)
        guard reply.status == 200 else { throw TestFailure("activity: \(reply.status) \(reply.text)") }
        return (reply.json["events"]?.arrayValue ?? []).compactMap { $0["type"]?.stringValue }
    }

    @Test func activityListsTheUsersEventsNewestFirstInPages() throws {
        let smtp = try TestSMTPServer()
        let server = try Self.server("activity", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register()
        let other = try server.register()
        _ = try server.newSession(account, userAgent: "Exosphere-iOS/2.0 (iPhone)")
        #expect(try server.signIn(account.email, "not-the-password").status == 401)
        // A failed sign-in's row is written after its answer: waited for, so that the next
        // sign-in comes after it.
        try waitUntil(timeout: .seconds(10), "the failed sign-in's activity row") {
            try activity(server, account.token).contains("sign_in_failed")
        }
        let session = try server.newSession(account)
        let sessions = try #require(try server.call("GET", "/users/me/sessions", token: session).json["sessions"]?.arrayValue)
        let revokable = try #require(sessions.first { $0["userAgent"] == "Exosphere-iOS/2.0 (iPhone)" }?["id"]?.stringValue)
        #expect(try server.call("DELETE", "/users/me/sessions/\(revokable)", token: session).status == 204)
        #expect(try server.call("POST", "/users/signout", token: account.token).status == 204)

        let all = try server.call("GET", "/users/me/activity", token: session)
        #expect(all.status == 200)
        #expect(all.header("Cache-Control") == "private, no-cache")
        let events = try #require(all.json["events"]?.arrayValue)
        try #require(events.count == 5)
        #expect(events.compactMap { $0["type"]?.stringValue } == ["signed_out", "session_revoked", "signed_in", "sign_in_failed", "signed_in"])
        #expect(events[4]["userAgent"]?.stringValue == "Exosphere-iOS/2.0 (iPhone)")
        #expect(events.allSatisfy { $0["ipAddress"]?.stringValue == "127.0.0.1" })
        #expect(events.allSatisfy { epochMilliseconds($0["at"]?.stringValue ?? "") != nil })
        #expect(all.json["next"] == .null)
        // Another user sees none of it.
        #expect(try activity(server, other.token).isEmpty)

        var seen: [String] = []
        var after: String?
        repeat {
            let page = try server.call("GET", "/users/me/activity?limit=2" + (after.map { "&after=\($0)" } ?? ""), token: session)
            #expect(page.status == 200)
            seen += (page.json["events"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            after = page.json["next"]?.stringValue
        } while after != nil
        #expect(seen == events.compactMap { $0["id"]?.stringValue })

        #expect(try server.call("GET", "/users/me/activity?after=nope", token: session).json["code"] == "invalid_cursor")
        #expect(try server.call("GET", "/users/me/activity?limit=0", token: session).json["code"] == "invalid_limit")
        #expect(try server.call("GET", "/users/me/activity").status == 401)
    }

    // MARK: - Delivery

    @Test func mailQueuedWhileTheRelayIsDownIsDeliveredWhenItReturns() throws {
        // A port nobody listens on yet: the relay comes up there later.
        let port = try ExosphereProcessTests.freePort()
        let server = try TestServer("relaydown") { configuration in
            configuration.mail.transport = .smtp(try SMTPConfiguration(url: "smtp+plain://127.0.0.1:\(port)"))
        }
        defer { server.shutdown() }
        let account = try server.register()
        // Tried, failed, kept.
        try waitUntil(timeout: .seconds(10)) {
            try server.withDatabase {
                try $0.query("SELECT count(*)::int8 FROM mail_outbox WHERE attempts >= 2 AND status = 'pending' AND last_error IS NOT NULL")[0]
                    .decode(Int.self, at: 0) == 1
            }
        }
        let smtp = try TestSMTPServer(port: port)
        let mail = try smtp.waitForMessages(where: Self.isTo(account.email))
        #expect(mail.count == 1)
        try waitUntil(timeout: .seconds(5)) {
            try server.withDatabase { try $0.query("SELECT count(*)::int8 FROM mail_outbox")[0].decode(Int.self, at: 0) == 0 }
        }
        #expect((try server.metric("exosphere_mail_total{outcome=\"retried\"}") ?? 0) >= 2)
        #expect(try server.metric("exosphere_mail_total{outcome=\"sent\"}") == 1)
    }

    /// No table holds a usable token at any moment: mail waits in the outbox with its token's
    /// slot, and the sender makes the token (committing its hash) just before each attempt. While
    /// the relay is down for a verification and a reset mail, on two instances, the outbox and the
    /// reset queue hold no token; once the mails arrive, no column of any table holds their
    /// tokens, as text or as bytes, and the tokens work: the last attempt's, which was delivered.
    @Test func noTableHoldsAMailedTokenAtAnyMoment() throws {
        let port = try ExosphereProcessTests.freePort()
        let adjust: (inout Configuration) throws -> Void = { configuration in
            configuration.mail.transport = .smtp(try SMTPConfiguration(url: "smtp+plain://127.0.0.1:\(port)"))
        }
        let first = try TestServer("tokens_at_rest1", adjust)
        defer { first.shutdown() }
        let second = try TestServer("tokens_at_rest2", sharingDatabaseWith: first, adjust)
        defer { second.shutdown() }
        let account = try first.register()
        #expect(try second.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        // Both tried (a token made for each attempt), failed, kept: and the queues hold no token.
        // (Then a newer reset request voids the first's link: that mail is dropped, not sent.)
        try waitUntil(timeout: .seconds(20), "both mails to have failed twice") {
            try first.withDatabase {
                try $0.query("SELECT count(*)::int8 FROM mail_outbox WHERE attempts >= 2 AND status = 'pending'")[0].decode(Int.self, at: 0) == 2
            }
        }
        let queued = try first.withDatabase { connection in
            try connection.query("SELECT variables::text FROM mail_outbox ORDER BY id").map { try $0.decode(String.self, at: 0) }
        }
        for variables in queued {
            #expect(variables.contains("\"tokenSlot\"") && !variables.contains("\"token\""), "\(variables)")
        }
        #expect(try first.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        try waitUntil(timeout: .seconds(20), "the newer reset request to be resolved (its mail queued in the same transaction)") {
            try first.withDatabase {
                try $0.query("SELECT count(*)::int8 FROM security_events WHERE type = 'password_reset_requested'")[0].decode(Int.self, at: 0) == 2
            }
        }
        let smtp = try TestSMTPServer(port: port)
        try waitUntil(timeout: .seconds(60), "the outbox to be empty") {
            try first.withDatabase { try $0.query("SELECT count(*)::int8 FROM mail_outbox")[0].decode(Int.self, at: 0) == 0 }
        }
        let mails = smtp.messages()
        #expect(mails.count == 2, "the verification and the newer reset only: \(mails.map(Self.subject))")
        let tokens = try mails.map { try Self.token(in: $0) }
        tokens.forEach(first.remember(token:))
        let found = try first.withDatabase { connection -> [String] in
            let tables = try connection.query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"
            ).map { try $0.decode(String.self, at: 0) }
            #expect(tables.contains("account_tokens") && tables.contains("mail_outbox") && tables.contains("password_reset_requests"))
            var found: [String] = []
            for table in tables {
                for token in tokens {
                    let hex = Array(token.utf8).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }
                        .joined()
                    let count = try connection.query(
                        """
                        SELECT count(*)::int8 FROM \(identifier: table) x
                        WHERE strpos(row_to_json(x)::text, \(token)) > 0 OR strpos(row_to_json(x)::text, \(hex)) > 0
                        """)[0].decode(Int.self, at: 0)
                    if count > 0 { found.append(table) }
                }
            }
            return found
        }
        #expect(found.isEmpty, "a mailed token is stored in \(found)")
        let resetToken = try #require(zip(mails, tokens).first { $0.0.contains("/reset-password#") }?.1)
        let verifyToken = try #require(zip(mails, tokens).first { $0.0.contains("/verify-email#") }?.1)
        #expect(try first.call("POST", "/users/verify-email", json: #"{"token": "\#(verifyToken)"}"#).status == 200)
        let newPassword = first.uniquePassword("after-rest")
        let reset = try second.call("POST", "/users/password-reset/confirm", json: #"{"token": "\#(resetToken)", "newPassword": "\#(newPassword)"}"#)
        #expect(reset.status == 200, "\(reset.text)")
    }

    @Test func aServerKilledBetweenCommitAndDeliverySendsTheMailAfterARestart() throws {
        let port = try ExosphereProcessTests.freePort()
        let databaseURL = try TestCluster.cluster().createDatabase("recovery_killed_\(getpid())")
        // A short lease: a mail the killed process had claimed is free again 2 s later.
        let flags = [
            "--database-url", databaseURL, "--smtp-url", "smtp+plain://127.0.0.1:\(port)", "--mail-retry-seconds", "0.2",
            "--mail-lease-seconds", "2",
        ]
        let first = try ExosphereProcessTests.serve(flags)
        let email = "killed-\(UInt32.random(in: 0 ... .max))@example.com"
        let registered = try HTTPClient.send(
            port: first.port, method: "POST", target: "/users", headers: [("Content-Type", "application/json")],
            body: Array(#"{"email": "\#(email)", "password": "correct horse battery"}"#.utf8))
        #expect(registered.status == 201)
        first.signal(SIGKILL)
        #expect(first.waitForExit(timeout: 10))
        let pending = try PostgresConnection(connectionString: databaseURL).query(
            "SELECT count(*)::int8 FROM mail_outbox WHERE status = 'pending'")[0].decode(Int.self, at: 0)
        #expect(pending == 1)

        let smtp = try TestSMTPServer(port: port)
        let second = try ExosphereProcessTests.serve(flags)
        do {
            #expect(try smtp.waitForMessages(timeout: 30, where: Self.isTo(email)).count == 1)
        } catch {
            let row = try PostgresConnection(connectionString: databaseURL).query(
                "SELECT attempts, next_attempt_at - now(), coalesce(last_error, '') FROM mail_outbox")
            Issue.record(
                "\(error); outbox: \(row.map { "\(try! $0.decode(Int32.self, at: 0)) \(try! $0.decode(String.self, at: 2))" }); first: \(first.stderr.suffix(3000)); second: \(second.stderr.suffix(3000))"
            )
        }
        second.signal(SIGTERM)
        #expect(second.waitForExit(timeout: 10))
    }

    @Test func mailGoesThroughSTARTTLSWithAuthenticationAndAVerifiedCertificate() throws {
        let certificates = try TestCertificates.shared()
        let smtp = try TestSMTPServer(["--starttls", certificates.server.certificate, certificates.server.key, "--auth", "exosphere:relay-secret"])
        let server = try TestServer("starttls") { configuration in
            var relay = try SMTPConfiguration(url: "smtp://exosphere:relay-secret@localhost:\(smtp.port)")
            relay.caFile = certificates.caFile
            configuration.mail.transport = .smtp(relay)
        }
        defer { server.shutdown() }
        let account = try server.register()
        _ = try smtp.waitForMessages(where: Self.isTo(account.email))
        // The script writes the message, then its summary: wait for the second too.
        try waitUntil(timeout: .seconds(10)) { (try? smtp.delivery(1)) != nil }
        let delivery = try smtp.delivery(1)
        #expect(delivery.tls)
        #expect(delivery.login == "exosphere")
        #expect(delivery.summary.allDefects.isEmpty, "\(delivery.summary.allDefects)")
        #expect(delivery.summary.parts.map(\.type) == ["text/plain", "text/html"])
        #expect(!String(decoding: try readFile(server.logPath), as: UTF8.self).contains("relay-secret"))
    }

    @Test func anUntrustedRelayCertificateIsNeverSentTo() throws {
        let certificates = try TestCertificates.shared()
        let smtp = try TestSMTPServer(["--starttls", certificates.server.certificate, certificates.server.key])
        // The system's trust store does not know the test CA.
        let server = try TestServer("untrusted") { configuration in
            configuration.mail.transport = .smtp(try SMTPConfiguration(url: "smtp://localhost:\(smtp.port)"))
        }
        defer { server.shutdown() }
        _ = try server.register()
        try waitUntil(timeout: .seconds(10)) {
            try server.withDatabase {
                try $0.query("SELECT count(*)::int8 FROM mail_outbox WHERE attempts >= 2 AND last_error LIKE '%certificate%'")[0].decode(
                    Int.self, at: 0) == 1
            }
        }
        #expect(smtp.deliveryCount == 0)
    }

    @Test func aPermanentRefusalIsRecordedWithTheRelaysReply() throws {
        let smtp = try TestSMTPServer(["--reject", "refuse-me"])
        let server = try Self.server("refused", smtp: smtp)
        defer { server.shutdown() }
        _ = try server.register(email: server.uniqueEmail("refuse-me"))
        let kept = try server.register()
        try waitUntil(timeout: .seconds(10)) {
            try server.withDatabase { try $0.query("SELECT count(*)::int8 FROM mail_outbox WHERE status = 'failed'")[0].decode(Int.self, at: 0) == 1 }
        }
        let (error, variables) = try server.withDatabase {
            let row = try $0.query("SELECT last_error, variables::text FROM mail_outbox WHERE status = 'failed'")[0]
            return (try row.decode(String.self, at: 0), try row.decode(String.self, at: 1))
        }
        #expect(error.hasPrefix("550"), "\(error)")
        #expect(variables == "{}")
        #expect(try server.metric("exosphere_mail_total{outcome=\"failed\"}") == 1)
        #expect(try smtp.waitForMessages(where: Self.isTo(kept.email)).count == 1)
    }

    @Test func twoInstancesSendEachMailOnce() throws {
        let port = try ExosphereProcessTests.freePort()
        let adjust: (inout Configuration) throws -> Void = { configuration in
            configuration.mail.transport = .smtp(try SMTPConfiguration(url: "smtp+plain://127.0.0.1:\(port)"))
            configuration.mail.batchSize = 3
        }
        let first = try TestServer("twosenders1", adjust)
        defer { first.shutdown() }
        let second = try TestServer("twosenders2", sharingDatabaseWith: first, adjust)
        defer { second.shutdown() }
        let emails = Mutex<[String]>([])
        try onThreads(8) { index in
            for _ in 0..<5 {
                let server = index % 2 == 0 ? first : second
                let account = try server.register(email: server.uniqueEmail("sender\(index % 2)"))
                emails.withLock { $0.append(account.email) }
            }
        }
        let smtp = try TestSMTPServer(port: port)
        _ = try smtp.waitForMessages(count: 40, timeout: 60)
        // A mail sent twice could still be on its way when the 40th arrives. Stopping both
        // instances waits for their senders to finish the mail in hand, and the relay has
        // written each mail it accepted before it said so: after that, all they ever sent is here.
        first.shutdown()
        second.shutdown()
        let all = smtp.messages()
        #expect(all.count == 40)
        let ids = all.compactMap { $0.components(separatedBy: "\r\n").first { $0.hasPrefix("Message-ID:") } }
        #expect(Set(ids).count == 40)
        for email in emails.withLock({ $0 }) { #expect(all.filter(Self.isTo(email)).count == 1) }
        let sent = first.app.mail.statistics.sent.load(ordering: .relaxed) + second.app.mail.statistics.sent.load(ordering: .relaxed)
        #expect(sent == 40)
    }

    @Test func withoutARelayMailIsWrittenToTheDevMailboxAndItsPathLogged() throws {
        let server = try TestServer("devmailbox")
        defer { server.shutdown() }
        let account = try server.register()
        let directory = "/tmp/exo-apitests-mail-devmailbox-\(getpid())"
        try waitUntil(timeout: .seconds(10)) {
            ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).contains { $0.hasSuffix(".eml") }
        }
        let file = try #require(try FileManager.default.contentsOfDirectory(atPath: directory).first { $0.hasSuffix(".eml") })
        let message = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
        #expect(Self.isTo(account.email)(message))
        #expect(message.contains("/verify-email#token="))
        // The sender writes the file, then logs its path: the file can be seen first.
        try waitUntil(timeout: .seconds(10), "the log to name \(file)") {
            try String(contentsOfFile: server.logPath, encoding: .utf8).contains(file)
        }
        #expect(!(try String(contentsOfFile: server.logPath, encoding: .utf8)).contains(try Self.token(in: message)))
    }

    // MARK: - Pages

    @Test func thePagesAreServedWithAStrictPolicy() throws {
        let server = try TestServer("pages")
        defer { server.shutdown() }
        for (path, type) in [
            ("/reset-password", "text/html; charset=utf-8"), ("/verify-email", "text/html; charset=utf-8"),
            ("/undo-email-change", "text/html; charset=utf-8"), ("/pages/undo-email-change.js", "text/javascript; charset=utf-8"),
            ("/remove-sign-in-method", "text/html; charset=utf-8"), ("/pages/remove-sign-in-method.js", "text/javascript; charset=utf-8"),
            ("/pages/theme.css", "text/css; charset=utf-8"), ("/pages/pages.css", "text/css; charset=utf-8"),
            ("/pages/pages.js", "text/javascript; charset=utf-8"),
            ("/pages/reset-password.js", "text/javascript; charset=utf-8"),
            ("/pages/verify-email.js", "text/javascript; charset=utf-8"),
        ] {
            let reply = try server.call("GET", path)
            #expect(reply.status == 200, "\(path)")
            #expect(reply.header("Content-Type") == type)
            let policy = try #require(reply.header("Content-Security-Policy"))
            #expect(policy.contains("default-src 'none'") && policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"))
            #expect(reply.header("Referrer-Policy") == "no-referrer")
            if type.hasPrefix("text/html") {
                #expect(!reply.text.contains("<script>") && !reply.text.contains(" style=") && !reply.text.contains("onclick"))
                #expect(!reply.text.contains("http://") && !reply.text.contains("https://"))
            }
        }
        #expect(try server.call("GET", "/.well-known/apple-app-site-association").status == 404)
        #expect(try server.call("GET", "/.well-known/assetlinks.json").status == 404)
    }

    /// The two pages in a real headless Chromium (`Tests/Browser/recovery_pages.py`, selenium),
    /// from the links the server mailed: a password reset and a verification. Screenshots of each
    /// page are kept in `artifacts/screenshots/recovery-pages/` (CI keeps them as artifacts).
    @Test(.drill) func thePagesFinishTheFlowsInARealBrowser() throws {
        let smtp = try TestSMTPServer()
        // The links must name the server's real origin: its port is chosen before it starts.
        let port = try ExosphereProcessTests.freePort()
        let server = try Self.server("browser", smtp: smtp) { configuration in
            configuration.server.port = port
            configuration.publicURL = "http://127.0.0.1:\(port)"
        }
        defer { server.shutdown() }
        let account = try server.register()
        let verifyMail = try smtp.waitForMessages(where: Self.isTo(account.email))[0]
        // Two identities, one planted while the address was unverified (the reset removes it)
        // and one taken as added after verification: the reset page lists the password and it.
        try server.withDatabase { connection in
            for (subject, email, planted) in [("g-planted", "planted@example.net", true), ("g-kept", "kept@example.net", false)] {
                _ = try connection.execute(
                    """
                    INSERT INTO identities (user_id, provider, subject, email) VALUES (\(account.id)::uuid, 'google', \(subject + "-" + UUID().uuidString), \(email))
                    """)
                _ = try connection.execute(
                    "UPDATE identities SET added_while_unverified = \(planted) WHERE email = \(email) AND user_id = \(account.id)::uuid")
            }
        }
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        let resetMail = try smtp.waitForMessages(where: { Self.isTo(account.email)($0) && $0.contains("/reset-password#") })[0]
        let resetLink = "http://127.0.0.1:\(port)/reset-password#token=\(try Self.token(in: resetMail))"
        let verifyLink = "http://127.0.0.1:\(port)/verify-email#token=\(try Self.token(in: verifyMail))"
        let newPassword = server.uniquePassword("browser")
        // Another account's change of address, confirmed: its old address has the undo link.
        let mover = try server.register()
        let moved = server.uniqueEmail("moved")
        #expect(try server.call("PATCH", "/users/me", token: mover.token, json: #"{"email": "\#(moved)"}"#).status == 200)
        let confirmation = try Self.token(in: try smtp.waitForMessages(where: Self.isTo(moved))[0])
        #expect(try server.call("POST", "/users/verify-email", json: #"{"token": "\#(confirmation)"}"#).status == 200)
        let undoMail = try smtp.waitForMessages(where: { Self.isTo(mover.email)($0) && $0.contains("/undo-email-change#") })[0]
        let undoLink = "http://127.0.0.1:\(port)/undo-email-change#token=\(try Self.token(in: undoMail))"
        // An account whose second factor is on: its reset applies with the code.
        let (guarded, secret, _) = try SecondFactorAPITests.enrolled(server)
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(guarded.email)"}"#).status == 202)
        let guardedMail = try smtp.waitForMessages(where: { Self.isTo(guarded.email)($0) && $0.contains("/reset-password#") })[0]
        let guardedLink = "http://127.0.0.1:\(port)/reset-password#token=\(try Self.token(in: guardedMail))"
        let guardedPassword = server.uniquePassword("guarded")
        server.advanceClock(by: 30)
        let code = try SecondFactorAPITests.code(secret, at: server.clock.now())
        let screenshots = TestServer.repositoryRoot + "/artifacts/screenshots/recovery-pages"
        try FileManager.default.createDirectory(atPath: screenshots, withIntermediateDirectories: true)
        let output = try run(
            "/usr/bin/python3",
            [
                TestServer.repositoryRoot + "/Tests/Browser/recovery_pages.py", "--reset-link", resetLink, "--new-password", newPassword,
                "--verify-link", verifyLink, "--expect-email", account.email, "--screenshots", screenshots,
                "--invalid-reset-link", resetLink, "--undo-link", undoLink, "--expect-restored", mover.email,
                "--expect-ways-in", "Your password", "--expect-ways-in", "Sign in with Google (kept@example.net)",
                "--mfa-reset-link", guardedLink, "--mfa-new-password", guardedPassword, "--mfa-code", code,
            ])
        #expect(output.contains("OK: recovery pages behave"), "\(output)")
        // What the browser did is what the server now holds.
        #expect(try server.signIn(account.email, newPassword).status == 200)
        #expect(try server.signIn(account.email, account.password).status == 401)
        let verified = try server.call("POST", "/users/signin", json: #"{"email": "\#(account.email)", "password": "\#(newPassword)"}"#)
        #expect(verified.json["user"]?["emailVerified"] == .bool(true))
        if let token = verified.json["accessToken"]?.stringValue { server.remember(token: token) }
        #expect(try server.signIn(mover.email, mover.password).status == 200, "the browser's undo put the old address back")
        #expect(try server.me(mover.token).status == 401, "and ended the sessions")
        #expect(try server.signIn(guarded.email, guardedPassword).code == "mfa_required", "the browser's reset applied with the code")
        for name in [
            "reset-form.png", "reset-done.png", "verify-done.png", "reset-invalid.png", "undo-confirm.png", "undo-done.png", "reset-mfa-done.png",
        ] {
            #expect(FileManager.default.fileExists(atPath: screenshots + "/" + name), "\(name)")
        }
    }

    @Test func theAppLinkFilesComeFromTheConfiguration() throws {
        let server = try TestServer("applinks") { configuration in
            configuration.appLinks.appleAppIDs = ["ABCDE12345.com.example.health"]
            configuration.appLinks.androidPackage = "com.example.health"
            configuration.appLinks.androidCertificateFingerprints = [Array(repeating: "AB", count: 32).joined(separator: ":")]
        }
        defer { server.shutdown() }
        let apple = try server.call("GET", "/.well-known/apple-app-site-association")
        #expect(apple.status == 200)
        #expect(apple.header("Content-Type") == "application/json")
        let details = try #require(apple.json["applinks"]?["details"]?.arrayValue)
        #expect(details.first?["appIDs"] == .array(["ABCDE12345.com.example.health"]))
        #expect(
            details.first?["components"]?.arrayValue?.compactMap { $0["/"]?.stringValue } == [
                "/reset-password", "/verify-email", "/undo-email-change", "/remove-sign-in-method",
            ])
        // Passkeys of this server in the app (the associated domain's webcredentials).
        #expect(apple.json["webcredentials"]?["apps"] == .array(["ABCDE12345.com.example.health"]))
        let android = try server.call("GET", "/.well-known/assetlinks.json")
        #expect(android.status == 200)
        #expect(android.json[0]?["target"]?["package_name"] == "com.example.health")
        #expect(android.json[0]?["relation"]?.arrayValue?.contains("delegate_permission/common.get_login_creds") == true)
    }
}

/// How much longer a request for a registered address takes than one for an unknown address,
/// relative to the latter: the median difference of `rounds` pairs sent one right after the other,
/// in alternating order (the difference within a pair cancels the machine's drift: other suites
/// run in parallel, which comparing the medians of the two kinds did not), after 30 pairs to warm
/// up. `request` sends one and returns its duration in seconds.
func relativeTimingDifference(
    _ name: String, rounds: Int = 500, registered: String, unknown: String, _ request: (String) throws -> Double
) throws -> Double {
    for _ in 0..<30 {
        _ = try request(registered)
        _ = try request(unknown)
    }
    var differences: [Double] = []
    var unregistered: [Double] = []
    for round in 0..<rounds {
        let (known, other): (Double, Double)
        if round % 2 == 0 {
            known = try request(registered)
            other = try request(unknown)
        } else {
            other = try request(unknown)
            known = try request(registered)
        }
        differences.append(known - other)
        unregistered.append(other)
    }
    func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
    let relative = median(differences) / median(unregistered)
    print("\(name) timing: median difference \(median(differences) * 1e3) ms on \(median(unregistered) * 1e3) ms, \(relative * 100) %")
    return relative
}
