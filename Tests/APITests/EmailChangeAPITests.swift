import API
import Accounts
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

/// A change of address (`../shared/API.md`, "Changing the email address"), end to end through a
/// real SMTP server: pending until the new mailbox proves itself, undone from the old one.
@Suite(.testThreads, .serialized)
struct EmailChangeAPITests {
    typealias Mails = RecoveryAPITests

    /// The link's token of the newest mail to `address` whose link goes to `path`, once `count` such mails came.
    static func link(_ smtp: TestSMTPServer, to address: String, path: String, count: Int = 1) throws -> String {
        let mails = try smtp.waitForMessages(count: count, where: { Mails.isTo(address)($0) && $0.contains(path + "#") })
        return try Mails.token(in: mails[mails.count - 1])
    }

    static func change(_ server: TestServer, _ token: String, to email: String, method: String = "PATCH", extra: String = "") throws -> Reply {
        try server.call(method, "/users/me", token: token, json: #"{"email": "\#(email)"\#(extra)}"#)
    }

    static func confirm(_ server: TestServer, _ token: String) throws -> Reply {
        try server.call("POST", "/users/verify-email", json: #"{"token": "\#(token)"}"#)
    }

    static func undo(_ server: TestServer, _ token: String) throws -> Reply {
        try server.call("POST", "/users/email-change/undo", json: #"{"token": "\#(token)"}"#)
    }

    /// A stolen bearer token used as the issue tells: move the address, reset the password through
    /// the new one. The address stays, the reset goes nowhere, and the owner stays signed in.
    @Test func aStolenTokenCannotMoveTheRecoveryAddress() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("emailchange_stolen", smtp: smtp)
        defer { server.shutdown() }
        let victim = try server.register(extra: #", "firstname": "Ayu""#)
        let attacker = server.uniqueEmail("attacker")
        let patched = try Self.change(server, victim.token, to: attacker, extra: #", "firstname": "Owned""#)
        #expect(patched.status == 200, "\(patched.text)")
        #expect(patched.json["email"]?.stringValue == victim.email)
        #expect(patched.json["pendingEmail"]?.stringValue == attacker)
        // Every other field is saved at once.
        #expect(patched.json["firstname"] == "Owned")
        #expect(try server.me(victim.token).json["pendingEmail"]?.stringValue == attacker)
        // The confirmation carries no text the requester chose.
        let confirmation = try smtp.waitForMessages(where: Mails.isTo(attacker))[0]
        #expect(Mails.subject(confirmation).contains("Confirm your new email address"))
        #expect(!confirmation.contains("Owned") && !confirmation.contains("Ayu"), "\(confirmation)")

        // A reset to the pending address reaches nobody; sign-in stays with the current one. Mail
        // is resolved and sent in the order it was asked for, so once the victim's own reset mail
        // (asked for after the attacker's) has come, a mail to the attacker would have too.
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(attacker)"}"#).status == 202)
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(victim.email)"}"#).status == 202)
        _ = try Self.link(smtp, to: victim.email, path: "/reset-password")
        #expect(!smtp.messages().contains { Mails.isTo(attacker)($0) && $0.contains("/reset-password#") })
        #expect(try server.signIn(victim.email, victim.password).status == 200)
        #expect(try server.signIn(attacker, victim.password).status == 401)
        #expect(try server.me(victim.token).status == 200)
    }

    /// The whole flow: pending, confirmed by the new mailbox (old links die, the old address gets
    /// a notice with an undo link), then undone: the old address is back, every session and reset ends.
    @Test func aConfirmedChangeMovesTheAddressAndTheOldOneCanUndoIt() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("emailchange_flow", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register(extra: #", "firstname": "Ayu""#)
        let oldVerification = try Self.link(smtp, to: account.email, path: "/verify-email")
        let newEmail = server.uniqueEmail("moved")
        #expect(try Self.change(server, account.token, to: newEmail).status == 200)
        let confirmation = try Self.link(smtp, to: newEmail, path: "/verify-email")
        // Until the link comes back, a reset link goes to the current address and works there.
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(account.email)"}"#).status == 202)
        let reset = try Self.link(smtp, to: account.email, path: "/reset-password")

        let confirmed = try Self.confirm(server, confirmation)
        #expect(confirmed.status == 200, "\(confirmed.text)")
        #expect(confirmed.json["email"]?.stringValue == newEmail)
        #expect(confirmed.json["emailVerified"] == .bool(true))
        #expect(confirmed.json["pendingEmail"] == .null)
        #expect(try Self.confirm(server, confirmation).json["code"] == "invalid_verification_token", "a link works once")
        // Links sent to the old address die with it.
        #expect(try Self.confirm(server, oldVerification).json["code"] == "invalid_verification_token")
        let deadReset = try server.call(
            "POST", "/users/password-reset/confirm", json: #"{"token": "\#(reset)", "newPassword": "\#(server.uniquePassword())"}"#)
        #expect(deadReset.json["code"] == "invalid_reset_token")
        #expect(try server.signIn(newEmail, account.password).status == 200)
        #expect(try server.signIn(account.email, account.password).status == 401)

        // The old address gets a notice naming the new one, with the undo link.
        let notice = try smtp.waitForMessages(where: { Mails.isTo(account.email)($0) && $0.contains("/undo-email-change#") })[0]
        #expect(notice.contains(newEmail))
        let undoToken = try Mails.token(in: notice)
        var moved = account
        moved.email = newEmail
        let second = try server.newSession(moved)
        #expect(try Self.change(server, second, to: server.uniqueEmail("third")).json["pendingEmail"] != .null)
        #expect(try server.call("POST", "/users/password-reset", json: #"{"email": "\#(newEmail)"}"#).status == 202)
        let newReset = try Self.link(smtp, to: newEmail, path: "/reset-password")

        let undone = try Self.undo(server, undoToken)
        #expect(undone.status == 200, "\(undone.text)")
        #expect(undone.json["status"] == "restored")
        #expect(undone.json["email"]?.stringValue == account.email)
        // Every session ends; the pending change and the reset of the address left die too.
        for token in [account.token, second] { #expect(try server.me(token).status == 401) }
        let signedIn = try server.signIn(account.email, account.password)
        #expect(signedIn.status == 200)
        #expect(signedIn.json["user"]?["emailVerified"] == .bool(true))
        #expect(signedIn.json["user"]?["pendingEmail"] == .null)
        #expect(try server.signIn(newEmail, account.password).status == 401)
        let afterUndo = try server.call(
            "POST", "/users/password-reset/confirm", json: #"{"token": "\#(newReset)", "newPassword": "\#(server.uniquePassword())"}"#)
        #expect(afterUndo.json["code"] == "invalid_reset_token")
        let again = try Self.undo(server, undoToken)
        #expect(again.status == 422)
        #expect(again.json["code"] == "invalid_undo_token")
        #expect(try Self.undo(server, "not-a-token").json["code"] == "invalid_undo_token")
        let token = try #require(signedIn.json["accessToken"]?.stringValue)
        server.remember(token: token)
        let events = try RecoveryAPITests().activity(server, token)
        #expect(events.filter { $0 == "email_changed" }.count == 2, "the change and its undo: \(events)")
    }

    /// A newer change replaces the pending one, writing the current address back cancels it, and
    /// an address that has an account is refused at once and at confirmation.
    @Test func aPendingChangeIsReplacedCancelledOrRefused() throws {
        let smtp = try TestSMTPServer()
        // Four changes are asked for here, one over the default limit (a taken address counts too).
        let server = try Mails.server("emailchange_pending", smtp: smtp) {
            $0.accounts.emailChangesPerUser = ThrottleRule(limit: 10, windowSeconds: 3_600)
        }
        defer { server.shutdown() }
        let account = try server.register()
        let (first, second) = (server.uniqueEmail("first"), server.uniqueEmail("second"))
        #expect(try Self.change(server, account.token, to: first).status == 200)
        let firstLink = try Self.link(smtp, to: first, path: "/verify-email")
        #expect(try Self.change(server, account.token, to: second, method: "PUT").json["pendingEmail"]?.stringValue == second)
        let secondLink = try Self.link(smtp, to: second, path: "/verify-email")
        #expect(try Self.confirm(server, firstLink).json["code"] == "invalid_verification_token", "replaced by the newer change")

        // The current address written back (in another letter case) cancels the pending change.
        let back = try Self.change(server, account.token, to: account.email.uppercased())
        #expect(back.status == 200)
        #expect(back.json["pendingEmail"] == .null)
        #expect(try Self.confirm(server, secondLink).json["code"] == "invalid_verification_token", "cancelled")
        // A patch that does not name the address leaves a pending change alone.
        let third = server.uniqueEmail("third")
        #expect(try Self.change(server, account.token, to: third).status == 200)
        #expect(
            try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "Still"}"#).json["pendingEmail"]?.stringValue == third)

        // Taken at request time: 409, and nothing pending changes.
        let other = try server.register()
        let taken = try Self.change(server, account.token, to: other.email.uppercased())
        #expect(taken.status == 409)
        #expect(taken.json["code"] == "email_taken")
        #expect(try server.me(account.token).json["pendingEmail"]?.stringValue == third)
        // Taken between the request and the confirmation: 409, and the link stays usable.
        let thirdLink = try Self.link(smtp, to: third, path: "/verify-email")
        let squatter = try server.register(email: third)
        let late = try Self.confirm(server, thirdLink)
        #expect(late.status == 409)
        #expect(late.json["code"] == "email_taken")
        #expect(try server.call("DELETE", "/users/me", token: squatter.token, json: #"{"password": "\#(squatter.password)"}"#).status == 204)
        #expect(try Self.confirm(server, thirdLink).json["email"]?.stringValue == third)
    }

    /// Whether an address has an account is not a free question: a change to a taken address is
    /// `409`, and counts against the user's changes like any other, so a token can ask it at most
    /// `emailChangesPerUser` times an hour.
    @Test func probingTakenAddressesCountsAgainstTheChanges() throws {
        let server = try TestServer("emailchange_probe")
        defer { server.shutdown() }
        let account = try server.register()
        var answers: [Int] = []
        for _ in 0..<4 {
            let other = try server.register()
            answers.append(try Self.change(server, account.token, to: other.email).status)
        }
        #expect(answers == [409, 409, 409, 429], "the default is 3 an hour")
        // Writing the current address back changes nothing, and is not counted.
        #expect(try Self.change(server, account.token, to: account.email).status == 200)
    }

    /// 3 changes an hour per user and per target address; the fourth is `429` with `Retry-After`.
    @Test func changesAreLimitedPerUserAndPerTargetAddress() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("emailchange_limits", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register()
        for index in 0..<3 { #expect(try Self.change(server, account.token, to: server.uniqueEmail("mine\(index)")).status == 200) }
        let refused = try Self.change(server, account.token, to: server.uniqueEmail("mine3"), extra: #", "firstname": "Lost""#)
        #expect(refused.status == 429)
        #expect(refused.json["code"] == "too_many_attempts")
        #expect(Int(refused.header("Retry-After") ?? "") ?? 0 > 3000)
        #expect(try server.me(account.token).json["firstname"] == "", "a refused request saves nothing")

        // One target address, asked for by four users: whoever asks, its mailbox gets three mails an hour.
        let target = server.uniqueEmail("target")
        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try Self.change(server, try server.register().token, to: target).status) }
        #expect(statuses == [200, 200, 200, 429])
    }

    /// Racing with one link: exactly one confirmation, and exactly one undo, wins.
    @Test func racingRequestsWithOneLinkApplyItOnce() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("emailchange_race", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register()
        let newEmail = server.uniqueEmail("raced")
        #expect(try Self.change(server, account.token, to: newEmail).status == 200)
        let confirmation = try Self.link(smtp, to: newEmail, path: "/verify-email")
        let confirms = Mutex<[Int]>([])
        try onThreads(8) { _ in
            let status = try Self.confirm(server, confirmation).status
            confirms.withLock { $0.append(status) }
        }
        #expect(confirms.withLock { $0 }.sorted() == [200] + Array(repeating: 422, count: 7))
        let undoLink = try Self.link(smtp, to: account.email, path: "/undo-email-change")
        let undos = Mutex<[Int]>([])
        try onThreads(8) { _ in
            let status = try Self.undo(server, undoLink).status
            undos.withLock { $0.append(status) }
        }
        #expect(undos.withLock { $0 }.sorted() == [200] + Array(repeating: 422, count: 7))
        #expect(try server.signIn(account.email, account.password).status == 200)
    }

    /// A → B → C: the undo link of the first change (mailed to A) puts A back and kills the later
    /// change's link (mailed to B), so a thief holding B cannot take the account back.
    @Test func theFirstAddressHasTheLastWord() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("emailchange_chain", smtp: smtp)
        defer { server.shutdown() }
        let account = try server.register()
        let (b, c) = (server.uniqueEmail("b"), server.uniqueEmail("c"))
        #expect(try Self.change(server, account.token, to: b).status == 200)
        #expect(try Self.confirm(server, try Self.link(smtp, to: b, path: "/verify-email")).status == 200)
        #expect(try Self.change(server, account.token, to: c).status == 200)
        #expect(try Self.confirm(server, try Self.link(smtp, to: c, path: "/verify-email")).status == 200)
        let undoA = try Self.link(smtp, to: account.email, path: "/undo-email-change")
        let undoB = try Self.link(smtp, to: b, path: "/undo-email-change")
        #expect(try Self.undo(server, undoA).json["email"]?.stringValue == account.email)
        #expect(try Self.undo(server, undoB).json["code"] == "invalid_undo_token")
        #expect(try server.signIn(account.email, account.password).status == 200)
    }

    /// An administrator's edit is the operator's proof: it applies at once, ends a pending change,
    /// and mails the old address a notice (without an undo link) and the new one a verification.
    @Test func anAdministratorsEditAppliesAtOnce() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("emailchange_admin", smtp: smtp)
        defer { server.shutdown() }
        let admin = try AdminAPITests.rootAdmin(server)
        let account = try server.register()
        let pending = server.uniqueEmail("pending")
        #expect(try Self.change(server, account.token, to: pending).status == 200)
        let pendingLink = try Self.link(smtp, to: pending, path: "/verify-email")
        let moved = server.uniqueEmail("by-admin")
        let edited = try server.send(
            "PATCH", "/admin/users/\(account.id)", headers: [("Authorization", "Bearer \(admin)"), ("Content-Type", "application/json")],
            body: Array(#"{"email": "\#(moved)"}"#.utf8))
        #expect(edited.status == 200, "\(edited.text)")
        #expect(edited.json["email"]?.stringValue == moved)
        #expect(edited.json["pendingEmail"] == .null)
        #expect(try server.signIn(moved, account.password).status == 200)
        #expect(try Self.confirm(server, pendingLink).json["code"] == "invalid_verification_token")
        let notice = try smtp.waitForMessages(where: { Mails.isTo(account.email)($0) && $0.contains(moved) })[0]
        #expect(!notice.contains("/undo-email-change"))
        _ = try Self.link(smtp, to: moved, path: "/verify-email")
    }
}
