import ExosphereClient
import Foundation
import TestSupport
import Testing

/// Password reset and email verification through the mailed links, and the activity list,
/// through the client against a live server whose mail is read back from its dev mailbox.
@Suite(.testThreads, .liveServer("recovery"), .serialized)  // tests count the server's answers in its metrics
struct RecoveryTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    // MARK: - Password reset

    @Test func aMailedResetLinkSetsThePasswordAndSignsThisDeviceIn() async throws {
        let (phone, email, oldPassword) = try await server.signedInClient()
        let account = try #require(phone.currentUser)
        // Another device, signed out, whose user forgot the password and opens the link in the app.
        let store = InMemorySessionStore()
        let laptop = try server.client(store: store)
        var changes = laptop.authStateChanges().makeAsyncIterator()
        #expect(await changes.next() == .initial(nil))

        try await laptop.requestPasswordReset(email: email.uppercased())
        try await laptop.requestPasswordReset(email: server.uniqueEmail("nobody"))  // the same answer
        let link = try #require(Client.recoveryLink(from: try await server.mailedLink(to: email, path: "reset-password")))
        #expect(link.kind == .passwordReset)
        #expect(link.token.count == 43)
        #expect(!laptop.isSignedIn, "asking for a link signs nobody in")

        // The policy is checked first, so the link still works afterwards.
        let weak = await exosphereError { try await laptop.confirmPasswordReset(token: link.token, newPassword: "short") }
        #expect(weak?.status == 422)
        #expect(weak?.code == .weakPassword)
        #expect(!laptop.isSignedIn)

        let user = try await laptop.confirmPasswordReset(token: link.token, newPassword: "a brand new password")
        #expect(user.id == account.id)
        #expect(user.emailVerified, "the link came through the address")
        #expect(laptop.currentUser == user)
        #expect(await changes.next() == .signedIn(user))
        #expect(try server.client(store: store).currentUser?.id == user.id, "the session is stored, as at sign-in")
        #expect(try await laptop.fetchUser().id == user.id)
        #expect(try await laptop.sessions().count == 1)

        // The phone's session ended with the old password.
        let ended = await exosphereError { _ = try await phone.fetchUser() }
        #expect(ended?.isSessionExpired == true)
        #expect(!phone.isSignedIn)
        let old = await exosphereError { try await phone.signIn(email: email, password: oldPassword) }
        #expect(old?.code == .invalidCredentials)
        try await phone.signIn(email: email, password: "a brand new password")

        // The link worked once; refusing it again leaves the new session alone.
        let reused = await exosphereError { try await laptop.confirmPasswordReset(token: link.token, newPassword: "yet another password") }
        #expect(reused?.status == 422)
        #expect(reused?.code == .invalidResetToken)
        #expect(laptop.currentUser?.id == user.id)
        _ = try await laptop.fetchUser()
    }

    @Test func aResetTokenThatIsNotLiveIsATypedError() async throws {
        let client = try server.client()
        for token in ["not a token", String(repeating: "A", count: 43)] {
            let error = await exosphereError { try await client.confirmPasswordReset(token: token, newPassword: "long enough password") }
            #expect(error?.status == 422)
            #expect(error?.code == .invalidResetToken)
            #expect(error?.fieldErrors.first?.field == "token")
        }
        #expect(!client.isSignedIn)

        // A newer request voids the older link.
        let (_, email, password) = try await server.signedInClient()
        try await client.requestPasswordReset(email: email)
        let first = try #require(Client.recoveryLink(from: try await server.mailedLink(to: email, path: "reset-password")))
        try await client.requestPasswordReset(email: email)
        let second = try #require(Client.recoveryLink(from: try await server.mailedLink(to: email, path: "reset-password", count: 2)))
        #expect(first.token != second.token)
        let superseded = await exosphereError { try await client.confirmPasswordReset(token: first.token, newPassword: "long enough password") }
        #expect(superseded?.code == .invalidResetToken)
        #expect(!client.isSignedIn)
        try await client.signIn(email: email, password: password)  // unchanged
    }

    @Test func aResetRequestForAnInvalidAddressIsRefused() async throws {
        let client = try server.client()
        let error = await exosphereError { try await client.requestPasswordReset(email: "not an email") }
        #expect(error?.status == 422)
        #expect(error?.code == .invalidEmail)
    }

    // MARK: - Email verification

    @Test func theRegistrationMailVerifiesTheAddressOnce() async throws {
        let (client, email, _) = try await server.signedInClient()
        #expect(client.currentUser?.emailVerified == false)
        let url = try await server.mailedLink(to: email, path: "verify-email")
        let link = try #require(Client.recoveryLink(from: url))
        #expect(link.kind == .emailVerification)

        let verified = try await client.verifyEmail(token: link.token)
        #expect(verified.emailVerified)
        #expect(verified.email == email)
        #expect(client.currentUser == verified, "the held copy is the verified one")
        // It carries the server's ETag: the next fetch is answered 304.
        let notModified = try await server.requests("GET", "/users/me", 304)
        #expect(try await client.fetchUser() == verified)
        #expect(try await server.requests("GET", "/users/me", 304) == notModified + 1)

        let again = await exosphereError { try await client.verifyEmail(token: link.token) }
        #expect(again?.status == 422)
        #expect(again?.code == .invalidVerificationToken)
        let already = await exosphereError { try await client.resendVerificationEmail() }
        #expect(already?.status == 409)
        #expect(already?.code == .alreadyVerified)
        #expect(client.isSignedIn)
    }

    @Test func aResendMailsANewLinkThatWorksOnAnotherAccountsDevice() async throws {
        let (client, email, _) = try await server.signedInClient()
        let first = try #require(Client.recoveryLink(from: try await server.mailedLink(to: email, path: "verify-email")))
        try await client.resendVerificationEmail()
        let second = try #require(Client.recoveryLink(from: try await server.mailedLink(to: email, path: "verify-email", count: 2)))
        #expect(first.token != second.token)

        // Opened on a device signed in to another account: it verifies the link's account and
        // leaves the device's own user as it was.
        let (other, _, _) = try await server.signedInClient()
        let othersUser = try #require(other.currentUser)
        let stale = await exosphereError { try await other.verifyEmail(token: first.token) }
        #expect(stale?.code == .invalidVerificationToken, "the resend voided the older link")
        let verified = try await other.verifyEmail(token: second.token)
        #expect(verified.email == email)
        #expect(verified.emailVerified)
        #expect(other.currentUser == othersUser)
        #expect(other.currentUser?.emailVerified == false)

        // The first client's copy does not know yet; the refused resend refreshes it.
        #expect(client.currentUser?.emailVerified == false)
        let already = await exosphereError { try await client.resendVerificationEmail() }
        #expect(already?.code == .alreadyVerified)
        #expect(client.currentUser?.emailVerified == true)
    }

    @Test func resendingNeedsASession() async throws {
        let error = await exosphereError { try await server.client().resendVerificationEmail() }
        #expect(error?.code == .notSignedIn)
    }

    // MARK: - Activity

    @Test func activityPagesThroughTheUsersEventsNewestFirst() async throws {
        let (client, email, password) = try await server.signedInClient()
        for device in 0..<3 {
            let other = try server.client { $0.userAgent = "Device/\(device)" }
            try await other.signIn(email: email, password: password)
        }
        _ = await exosphereError { try await server.client { $0.userAgent = "Guesser/1" }.signIn(email: email, password: "not the password") }
        // The failed sign-in's row is written after its answer.
        try await waitUntil { try await client.activityPage(after: nil, limit: 10).events.contains { $0.type == .signInFailed } }

        var pages: [ActivityPage] = []
        var cursor: String?
        repeat {
            let page = try await client.activityPage(after: cursor, limit: 2)
            pages.append(page)
            cursor = page.next
        } while cursor != nil
        #expect(pages.map(\.events.count) == [2, 2])
        let events = pages.flatMap(\.events)
        #expect(events.map(\.type) == [.signInFailed, .signedIn, .signedIn, .signedIn])
        #expect(events.map(\.userAgent) == ["Guesser/1", "Device/2", "Device/1", "Device/0"])
        #expect(events.allSatisfy { $0.ipAddress == "127.0.0.1" })
        #expect(zip(events, events.dropFirst()).allSatisfy { $0.at >= $1.at })
        #expect(events.allSatisfy { abs($0.at.timeIntervalSinceNow) < 600 })
        #expect(Set(events.map(\.id)).count == events.count)

        // The sequence lists the same, a page at a time: reaching the first event fetches one page.
        var listed: [ActivityEvent] = []
        for try await event in client.activity(pageSize: 2) { listed.append(event) }
        #expect(listed == events)
        let fetched = try await server.requests("GET", "/users/me/activity", 200)
        var iterator = client.activity(pageSize: 2).makeAsyncIterator()
        #expect(try await iterator.next() == events[0])
        #expect(try await iterator.next() == events[1])
        #expect(try await server.requests("GET", "/users/me/activity", 200) == fetched + 1)

        // Another user sees none of it.
        let (stranger, _, _) = try await server.signedInClient()
        #expect(try await stranger.activityPage().events.isEmpty)
    }

    @Test func activityErrorsCarryTheirCodes() async throws {
        let (client, _, _) = try await server.signedInClient()
        let limit = await exosphereError { _ = try await client.activityPage(limit: 0) }
        #expect(limit?.code == "invalid_limit")
        let cursor = await exosphereError { _ = try await client.activityPage(after: "nope") }
        #expect(cursor?.code == "invalid_cursor")
        let signedOut = await exosphereError { _ = try await server.client().activityPage() }
        #expect(signedOut?.code == .notSignedIn)
    }
}

/// Reading mailed links and event types: no server.
@Suite(.testThreads)
struct RecoveryLinkTests {
    @Test func aResetOrVerificationLinkGivesItsToken() throws {
        let token = "q0pM2aVxk7Lr9_ZbWc-3yT8nHf1JdS6uEo4iGpX5vBA"
        let reset = try #require(Client.recoveryLink(from: URL(string: "https://accounts.example.com/reset-password#token=\(token)")!))
        #expect(reset == RecoveryLink(kind: .passwordReset, token: token))
        let verify = try #require(Client.recoveryLink(from: URL(string: "https://accounts.example.com/verify-email#token=\(token)")!))
        #expect(verify == RecoveryLink(kind: .emailVerification, token: token))
    }

    @Test(arguments: [
        "https://example.com/accounts/reset-password#token=abc",  // a public URL with a path prefix
        "https://example.com/reset-password/#token=abc",
        "https://example.com/reset-password?utm_source=mail#token=abc",
        "https://example.com/reset-password#from=mail&token=abc&x=1",
        "https://example.com/reset-password#token=%61bc",
        "https://example.com/reset-password#token=abc%20",  // as the server's page reads it: trimmed
        "myapp://reset-password#token=abc",  // a custom scheme naming the page as its host
    ])
    func linksAreReadAsTheServersPagesReadThem(_ text: String) throws {
        let link = try #require(Client.recoveryLink(from: URL(string: text)!))
        #expect(link.kind == .passwordReset)
        #expect(link.token == "abc")
    }

    @Test(arguments: [
        "https://example.com/reset-password",
        "https://example.com/reset-password?token=abc",  // the server never puts it in the query
        "https://example.com/reset-password#token=",
        "https://example.com/reset-password#tokens=abc",
        "https://example.com/reset-password#abc",
        "https://example.com/reset-passwords#token=abc",
        "https://example.com/users/me/images#token=abc",
        "https://example.com/#token=abc",
        "myapp://open#token=abc",
    ])
    func otherURLsAreNotRecoveryLinks(_ text: String) {
        #expect(Client.recoveryLink(from: URL(string: text)!) == nil)
    }

    @Test func aLinksDescriptionLeavesTheTokenOut() {
        let link = RecoveryLink(kind: .passwordReset, token: "secret-token")
        #expect("\(link)" == "RecoveryLink(passwordReset)")
        #expect(!String(describing: [link]).contains("secret-token"))
    }

    @Test func eventTypesRoundTripAndUnknownOnesAreKept() {
        let known = [
            "signed_in", "sign_in_failed", "signed_out", "session_revoked", "password_changed",
            "password_reset_requested", "password_reset", "email_changed", "email_verified", "locked_out",
        ]
        for raw in known {
            let type = ActivityEvent.EventType(rawValue: raw)
            #expect(type.rawValue == raw)
            if case .unknown = type { Issue.record("\(raw) is a known type") }
        }
        #expect(Set(known.map(ActivityEvent.EventType.init(rawValue:))).count == 10)
        #expect(ActivityEvent.EventType(rawValue: "passkey_added") == .unknown("passkey_added"))
        #expect(ActivityEvent.EventType.unknown("signed_in") == .signedIn)
        #expect(ActivityEvent.EventType.lockedOut.description == "locked_out")
    }
}
