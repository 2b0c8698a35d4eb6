import API
import Accounts
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

/// Sign-in and reauthentication by a code mailed to the account's address (`../shared/API.md`,
/// "Guests and codes by mail"), end to end through a real SMTP server: a code works once, guesses
/// and replays fail, a newer code voids older ones, the request tells nothing about the address.
@Suite(.testThreads, .serialized)
struct EmailCodesAPITests {
    typealias Mails = RecoveryAPITests

    /// The 8 digits of a code mail: the line that holds them alone.
    static func code(in message: String) throws -> String {
        let lines = message.replacingOccurrences(of: "=\r\n", with: "").components(separatedBy: "\r\n")
        guard let line = lines.first(where: { line in line.count == 8 && line.allSatisfy { $0.isASCII && $0.isNumber } }) else {
            throw TestFailure("no code in the mail: \(message.prefix(2000))")
        }
        return line
    }

    static func isCodeMail(to address: String) -> (String) -> Bool {
        { Mails.isTo(address)($0) && Mails.subject($0).contains("code") }
    }

    /// The code of the newest code mail to `address`, once `count` came.
    static func mailedCode(_ smtp: TestSMTPServer, to address: String, count: Int = 1) throws -> String {
        let mails = try smtp.waitForMessages(count: count, where: isCodeMail(to: address))
        return try code(in: mails[mails.count - 1])
    }

    static func request(_ server: TestServer, _ email: String) throws -> Reply {
        try server.call("POST", "/users/signin/email-code", json: #"{"email": "\#(email)"}"#)
    }

    static func verify(_ server: TestServer, _ email: String, _ code: String) throws -> Reply {
        let reply = try server.call("POST", "/users/signin/email-code/verify", json: #"{"email": "\#(email)", "code": "\#(code)"}"#)
        if let token = reply.json["accessToken"]?.stringValue { server.remember(token: token) }
        return reply
    }

    /// A code signs in once and verifies the address; a wrong code, a replay, an older code and a
    /// code after five wrong ones fail; the same answer for an unknown address, which gets no mail.
    @Test func aCodeSignsInOnceAndGuessesAndReplaysFail() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("codes_flow", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register(extra: #", "firstname": "Ayu""#)
        try server.verifyAddress(account)
        let accepted = try Self.request(server, account.email)
        #expect(accepted.status == 202, "\(accepted.text)")
        let unknown = try Self.request(server, "nobody-\(UUID().uuidString)@example.com")
        #expect(unknown.status == 202 && unknown.body == accepted.body)
        let code = try Self.mailedCode(smtp, to: account.email)
        server.remember(token: code)
        #expect(code.count == 8)
        let mail = try smtp.waitForMessages(where: Self.isCodeMail(to: account.email))[0]
        #expect(mail.contains("Ayu"), "a verified address is greeted by name")
        let wrongCode = code == "00000000" ? "11111111" : "00000000"
        let wrong = try Self.verify(server, account.email, wrongCode)
        #expect(wrong.status == 401 && wrong.code == "invalid_code", "\(wrong.text)")
        let signedIn = try Self.verify(server, account.email, code)
        #expect(signedIn.status == 200, "\(signedIn.text)")
        #expect(signedIn.json["user"]?["id"]?.stringValue == account.id && signedIn.json["user"]?["emailVerified"] == true)
        let token = try #require(signedIn.json["accessToken"]?.stringValue)
        #expect(try server.me(token).status == 200)
        #expect(try Self.verify(server, account.email, code).code == "invalid_code", "a code works once")
        // The activity says how.
        let activity = try server.call("GET", "/users/me/activity", token: token).json["events"]?.arrayValue ?? []
        #expect(activity.contains { $0["type"] == "signed_in" && $0["method"] == "email_code" }, "\(activity)")

        // A newer code voids the older one.
        #expect(try Self.request(server, account.email).status == 202)
        let older = try Self.mailedCode(smtp, to: account.email, count: 2)
        #expect(try Self.request(server, account.email).status == 202)
        let newer = try Self.mailedCode(smtp, to: account.email, count: 3)
        [older, newer].forEach { server.remember(token: $0) }
        if older != newer { #expect(try Self.verify(server, account.email, older).code == "invalid_code") }
        #expect(try Self.verify(server, account.email, newer).status == 200)

        // Five wrong codes void the code.
        #expect(try Self.request(server, account.email).status == 202)
        let guessed = try Self.mailedCode(smtp, to: account.email, count: 4)
        server.remember(token: guessed)
        let wrongOne = guessed == "12345678" ? "87654321" : "12345678"
        for _ in 0..<5 { #expect(try Self.verify(server, account.email, wrongOne).code == "invalid_code") }
        #expect(try Self.verify(server, account.email, guessed).code == "invalid_code", "five wrong codes void it")

        // A code lives 10 minutes, then the housekeeping deletes it.
        #expect(try Self.request(server, account.email).status == 202)
        let late = try Self.mailedCode(smtp, to: account.email, count: 5)
        server.remember(token: late)
        server.advanceClock(by: 601)
        #expect(try Self.verify(server, account.email, late).code == "invalid_code", "expired")
        func codes() throws -> Int {
            try server.withDatabase { try $0.query("SELECT count(*)::int8 FROM email_codes")[0].decode(Int.self, at: 0) }
        }
        #expect(try codes() == 1)
        try waitUntil(timeout: .seconds(10), "a housekeeping round") { try server.app.accounts.housekeeping.runOnce() != nil }
        #expect(try codes() == 0)

        // No code is stored, queued or logged: only their hashes are.
        let stored = try server.withDatabase { connection in
            try connection.query("SELECT count(*)::int8 FROM mail_outbox WHERE variables::text ~ '[0-9]{8}'")[0].decode(Int.self, at: 0)
        }
        #expect(stored == 0)
        // The unknown address got no mail: the known one's five came after its request.
        #expect(smtp.messages().filter { $0.contains("nobody-") }.isEmpty)
        #expect(server.leaks().isEmpty, "\(server.leaks())")
    }

    /// Four sign-ins racing with one right code: one session.
    @Test func racingSignInsWithOneCodeGetOneSession() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("codes_race", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register()
        #expect(try Self.request(server, account.email).status == 202)
        let code = try Self.mailedCode(smtp, to: account.email)
        server.remember(token: code)
        let statuses = Mutex<[Int]>([])
        let together = Barrier(4)
        try onThreads(4) { _ in
            try together.arrive()
            let status = try Self.verify(server, account.email, code).status
            statuses.withLock { $0.append(status) }
        }
        #expect(statuses.withLock { $0.sorted() } == [200, 401, 401, 401], "\(statuses.withLock { $0 })")
    }

    /// The mailbox proves the address: a password (and ways in) that whoever registered an
    /// unverified address set go when its owner signs in by a code, as a reset would.
    @Test func aCodeToAnUnverifiedAddressEndsWhatItsRegistrantAdded() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("codes_prehijack", smtp: smtp)
        defer { server.shutdown() }
        // Someone registers the owner's address with a password of their own.
        let squatter = try server.register()
        #expect(try Self.request(server, squatter.email).status == 202)
        let code = try Self.mailedCode(smtp, to: squatter.email)
        server.remember(token: code)
        let owner = try Self.verify(server, squatter.email, code)
        #expect(owner.status == 200 && owner.json["user"]?["emailVerified"] == true, "\(owner.text)")
        #expect(try server.signIn(squatter.email, squatter.password).status == 401, "the registrant's password is gone")
        #expect(try server.me(squatter.token).status == 401, "and their session")
        let token = try #require(owner.json["accessToken"]?.stringValue)
        #expect(try server.call("GET", "/users/me/sign-in-methods", token: token).json["password"] == false)
    }

    /// With `--email-code-signup on`, the first right code for an unknown address makes the
    /// account; off (the default), such an address gets nothing.
    @Test func aCodeForAnUnknownAddressMakesTheAccountOnlyWhenSignupIsOn() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("codes_signup", smtp: smtp) { $0.accounts.emailCodeSignup = true }
        defer { server.shutdown() }
        let address = server.uniqueEmail("newcomer")
        #expect(try Self.request(server, address).status == 202)
        let code = try Self.mailedCode(smtp, to: address)
        server.remember(token: code)
        let created = try Self.verify(server, address, code)
        #expect(created.status == 200, "\(created.text)")
        let user = created.json["user"] ?? .null
        #expect(user["email"]?.stringValue == address && user["emailVerified"] == true && user["isGuest"] == false)
        // The next code signs the same account in.
        #expect(try Self.request(server, address).status == 202)
        let again = try Self.mailedCode(smtp, to: address, count: 2)
        server.remember(token: again)
        #expect(try Self.verify(server, address, again).json["user"]?["id"] == user["id"])

        // Without a password, the account proves itself with a code when a change needs it.
        let token = try #require(created.json["accessToken"]?.stringValue)
        server.advanceClock(by: 3_600)
        let stale = try server.call("POST", "/users/me/passkeys/registration/options", token: token)
        #expect(stale.status == 403 && stale.code == "reauthentication_required", "\(stale.text)")
        #expect(try server.call("POST", "/users/me/reauthenticate/code", token: token).status == 202)
        let proof = try Self.mailedCode(smtp, to: address, count: 3)
        server.remember(token: proof)
        let wrongProof = proof == "00000000" ? "11111111" : "00000000"
        let wrong = try server.call("POST", "/users/me/reauthenticate", token: token, json: #"{"code": "\#(wrongProof)"}"#)
        #expect(wrong.status == 422 && wrong.code == "invalid_code", "\(wrong.text)")
        let proved = try server.call("POST", "/users/me/reauthenticate", token: token, json: #"{"code": "\#(proof)"}"#)
        #expect(proved.status == 200, "\(proved.text)")
        #expect(try server.call("POST", "/users/me/reauthenticate", token: token, json: #"{"code": "\#(proof)"}"#).status == 422, "once")
        #expect(try server.call("POST", "/users/me/passkeys/registration/options", token: token).status == 200)
        // A first password, now that the holder proved the mailbox.
        let password = server.uniquePassword("first")
        server.remember(password: password)
        #expect(try server.call("POST", "/users/me/password", token: token, json: #"{"newPassword": "\#(password)"}"#).status == 200)
        #expect(try server.signIn(address, password).status == 200)

        // Off, an unknown address gets nothing and no code signs it up.
        let closed = try Mails.server("codes_closed", smtp: smtp)
        defer { closed.shutdown() }
        let stranger = closed.uniqueEmail("stranger")
        #expect(try Self.request(closed, stranger).status == 202)
        let known = try closed.register()
        #expect(try Self.request(closed, known.email).status == 202)
        _ = try Self.mailedCode(smtp, to: known.email)
        #expect(!smtp.messages().contains(where: Mails.isTo(stranger)), "requests are resolved in order: the stranger's came first")
        #expect(try Self.verify(closed, stranger, "12345678").code == "invalid_code")
    }

    /// `POST /users/signin/email-code` answers a registered and an unknown address after the same
    /// work: the difference of paired requests is within 10% of one request.
    @Test func aCodeRequestTakesTheSameTimeForARegisteredAndAnUnknownAddress() throws {
        let server = try TestServer("codes_timing") {
            $0.accounts.emailCodesPerEmail = ThrottleRule(limit: 1_000_000, windowSeconds: 3600)
            $0.accounts.emailCodesPerAddress = ThrottleRule(limit: 1_000_000, windowSeconds: 3600)
        }
        defer { server.shutdown() }
        let account = try server.register()
        let unknown = "nobody-\(UUID().uuidString)@example.com"
        func time(_ email: String) throws -> Double {
            let start = ContinuousClock.now
            let reply = try Self.request(server, email)
            let elapsed = ContinuousClock.now - start
            guard reply.status == 202 else { throw TestFailure("\(reply.status) \(reply.text)") }
            return elapsed.inSeconds
        }
        let relative = try relativeTimingDifference("code request", registered: account.email, unknown: unknown, time)
        #expect(abs(relative) < 0.10, "registered − unknown: \(relative * 100) % of one request")
    }
}
