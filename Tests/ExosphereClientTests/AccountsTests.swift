import ExosphereClient
import Foundation
import TestSupport
import Testing

/// Registration, sign-in, sign-out, sessions, the password and the account, through the client.
@Suite(.testThreads, .liveServer("accounts"), .serialized)  // tests count the server's answers in its metrics
struct AccountsTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    @Test func registerSignsInAndSignInStartsAnotherSession() async throws {
        let client = try server.client()
        #expect(client.currentUser == nil)
        #expect(!client.isSignedIn)
        let email = server.uniqueEmail("Ayu")
        let registered = try await client.register(
            email: email, password: "correct horse battery", firstname: "Ayu",
            lastname: "Lestari", data: ["isMarried": false, "height": 160.0])
        #expect(registered.email == email)
        #expect(registered.firstname == "Ayu" && registered.lastname == "Lestari")
        #expect(!registered.emailVerified)
        #expect(registered.bool(forKey: "isMarried") == false)
        #expect(registered.double(forKey: "height") == 160)
        #expect(client.currentUser == registered)
        #expect(client.isSignedIn)

        let other = try server.client()
        let signedIn = try await other.signIn(email: email.uppercased(), password: "correct horse battery")
        #expect(signedIn.id == registered.id)
        #expect(try await client.sessions().count == 2)
    }

    @Test func registrationErrorsCarryCodeStatusAndFields() async throws {
        let (_, email, _) = try await server.signedInClient()
        let client = try server.client()
        let taken = await exosphereError { try await client.register(email: email, password: "another password") }
        #expect(taken?.status == 409)
        #expect(taken?.code == .emailTaken)
        let weak = await exosphereError { try await client.register(email: server.uniqueEmail(), password: "short") }
        #expect(weak?.status == 422)
        #expect(weak?.code == .weakPassword)
        #expect(weak?.fieldErrors.first?.field == "password")
        let invalid = await exosphereError { try await client.register(email: "not an email", password: "long enough password") }
        #expect(invalid?.code == .invalidEmail)
        #expect(invalid.map { "\($0)" } == "ExosphereError(422, invalid_email)")
        #expect(client.currentUser == nil)
    }

    @Test func wrongCredentialsAreRefusedWithoutTouchingTheSession() async throws {
        let (client, email, _) = try await server.signedInClient()
        let error = await exosphereError { try await client.signIn(email: email, password: "not the password") }
        #expect(error?.status == 401)
        #expect(error?.code == .invalidCredentials)
        #expect(error?.isSessionExpired == false)
        #expect(client.isSignedIn, "a failed sign-in leaves the signed-in session alone")
        _ = try await client.fetchUser()
    }

    @Test func requestsThatNeedASessionFailAtOnceWithoutOne() async throws {
        let client = try server.client()
        let error = await exosphereError { _ = try await client.fetchUser() }
        #expect(error?.code == .notSignedIn)
        #expect(error?.status == nil)
        try await client.signOut()  // nothing to do
    }

    @Test func sessionsListThisClientAndOthersWithTheirUserAgents() async throws {
        let email = server.uniqueEmail()
        let phone = try server.client { $0.userAgent = "Tutorial/1.0 iPhone" }
        try await phone.register(email: email, password: "correct horse battery")
        let tablet = try server.client { $0.userAgent = "Tutorial/1.0 iPad" }
        try await tablet.signIn(email: email, password: "correct horse battery")

        let sessions = try await phone.sessions()
        #expect(sessions.count == 2)
        let current = try #require(sessions.first { $0.isCurrent })
        #expect(current.userAgent == "Tutorial/1.0 iPhone")
        let other = try #require(sessions.first { !$0.isCurrent })
        #expect(other.userAgent == "Tutorial/1.0 iPad")
        #expect(current.expiresAt > current.createdAt)
        #expect(abs(current.lastSeenAt.timeIntervalSinceNow) < 120)

        // Revoking the other device signs it out, and only it.
        try await phone.revokeSession(other)
        #expect(try await phone.sessions().map(\.id) == [current.id])
        let error = await exosphereError { _ = try await tablet.fetchUser() }
        #expect(error?.isSessionExpired == true)
        #expect(!tablet.isSignedIn)

        // Revoking its own session signs this client out.
        var events = phone.authStateChanges().makeAsyncIterator()
        #expect(await events.next() == .initial(phone.currentUser))
        try await phone.revokeSession(current)
        #expect(!phone.isSignedIn)
        #expect(await events.next() == .signedOut)
    }

    @Test func revokingAnUnknownSessionIsNotFound() async throws {
        let (client, _, _) = try await server.signedInClient()
        let (other, _, _) = try await server.signedInClient()
        let foreign = try #require(try await other.sessions().first)
        let error = await exosphereError { try await client.revokeSession(foreign) }
        #expect(error?.status == 404)
        #expect(client.isSignedIn)
        #expect(other.isSignedIn)
        _ = try await other.fetchUser()
    }

    @Test(arguments: [SignOutScope.current, .others, .all])
    func signOutEndsTheSessionsItsScopeNames(scope: SignOutScope) async throws {
        let (client, email, password) = try await server.signedInClient()
        let second = try server.client()
        try await second.signIn(email: email, password: password)
        var events = client.authStateChanges().makeAsyncIterator()
        #expect(await events.next() == .initial(client.currentUser))

        try await client.signOut(scope: scope)
        let thisOneEnded = scope != .others
        let othersEnded = scope != .current
        #expect(client.isSignedIn == !thisOneEnded)
        if thisOneEnded { #expect(await events.next() == .signedOut) }
        // The other client learns it at its next request.
        do {
            _ = try await second.fetchUser()
            #expect(!othersEnded)
        } catch let error as ExosphereError {
            #expect(othersEnded)
            #expect(error.isSessionExpired)
            #expect(!second.isSignedIn)
        }
        if !thisOneEnded { _ = try await client.fetchUser() }
    }

    @Test func changingThePasswordKeepsThisClientSignedInAndEndsTheOthers() async throws {
        let (client, email, password) = try await server.signedInClient()
        let other = try server.client()
        try await other.signIn(email: email, password: password)
        let third = try server.client()
        try await third.signIn(email: email, password: password)

        let wrong = await exosphereError { try await client.changePassword(old: "not the password", new: "a new password") }
        #expect(wrong?.status == 403)
        #expect(wrong?.code == .invalidPassword)
        let mismatch = await exosphereError { try await client.changePassword(old: password, new: "a new password", confirm: "another") }
        #expect(mismatch?.code == .passwordMismatch)
        let unchanged = await exosphereError { try await client.changePassword(old: password, new: password) }
        #expect(unchanged?.code == .passwordUnchanged)
        #expect(client.isSignedIn, "refused changes keep the session")

        let revoked = try await client.changePassword(old: password, new: "a new password", confirm: "a new password")
        #expect(revoked == 2)
        #expect(try await client.fetchUser().email == email, "the new token is in use")
        #expect(try await client.sessions().count == 1)
        let ended = await exosphereError { _ = try await other.fetchUser() }
        #expect(ended?.code == .invalidToken)
        let old = await exosphereError { try await other.signIn(email: email, password: password) }
        #expect(old?.code == .invalidCredentials)
        try await other.signIn(email: email, password: "a new password")
    }

    @Test func deletingTheAccountNeedsThePasswordAndSignsOut() async throws {
        let (client, email, password) = try await server.signedInClient()
        var events = client.authStateChanges().makeAsyncIterator()
        #expect(await events.next() == .initial(client.currentUser))
        let wrong = await exosphereError { try await client.deleteAccount(password: "not the password") }
        #expect(wrong?.code == .invalidPassword)
        #expect(client.isSignedIn)

        try await client.deleteAccount(password: password)
        #expect(!client.isSignedIn)
        #expect(await events.next() == .accountDeleted)
        let gone = await exosphereError { try await client.signIn(email: email, password: password) }
        #expect(gone?.code == .invalidCredentials)
    }

    @Test func authStateChangesTellEverySubscriber() async throws {
        let client = try server.client()
        var first = client.authStateChanges().makeAsyncIterator()
        var second = client.authStateChanges().makeAsyncIterator()
        #expect(await first.next() == .initial(nil))
        #expect(await second.next() == .initial(nil))
        let user = try await client.register(email: server.uniqueEmail(), password: "correct horse battery")
        #expect(await first.next() == .signedIn(user))
        #expect(await second.next() == .signedIn(user))
        try await client.signOut()
        #expect(await first.next() == .signedOut)
        #expect(await second.next() == .signedOut)
    }

    @Test func authStateChangesEndWithTheClient() async throws {
        var client: Client? = try server.client()
        let changes = client!.authStateChanges()
        // The watcher says when it has a change, so that the client goes while it waits for the next.
        let (received, receiving) = AsyncStream<Void>.makeStream()
        let watcher = Task {
            var seen: [AuthStateChange] = []
            for await change in changes {
                seen.append(change)
                receiving.yield()
            }
            return seen
        }
        var receipts = received.makeAsyncIterator()
        #expect(await receipts.next() != nil, "the watcher saw no first change")
        client = nil
        #expect(await watcher.value == [.initial(nil)])
    }

    @Test func theSignedInUserSurvivesARestartOfTheApp() async throws {
        let directory = try temporaryDirectory("store")
        let file = directory.appendingPathComponent("session/exosphere.session")
        let (client, _, _) = try await server.signedInClient(firstname: "Ayu", store: FileSessionStore(url: file))
        var user = try await client.fetchUser()
        user.set(CalendarDate(year: 1994, month: 5, day: 17)!, forKey: "dateOfBirth")
        user = try await client.save(user)

        // A new process: a new client on the same file.
        let restarted = try server.client(store: FileSessionStore(url: file))
        #expect(restarted.restoreError == nil)
        #expect(restarted.isSignedIn)
        #expect(restarted.currentUser == user)
        #expect(restarted.currentUser?.date(forKey: "dateOfBirth") == CalendarDate(year: 1994, month: 5, day: 17))
        // The stored ETag comes back too: nothing changed, so the server answers 304.
        let notModified = try await server.requests("GET", "/users/me", 304)
        #expect(try await restarted.fetchUser() == user)
        #expect(try await server.requests("GET", "/users/me", 304) == notModified + 1)

        try await restarted.signOut()
        #expect(!FileManager.default.fileExists(atPath: file.path), "sign-out removes the stored session")
        #expect(try server.client(store: FileSessionStore(url: file)).currentUser == nil)
    }

    @Test func anUnreadableStoredSessionStartsSignedOutAndSaysWhy() async throws {
        let store = InMemorySessionStore()
        try store.save(Data("not a session".utf8))
        let client = try server.client(store: store)
        #expect(client.currentUser == nil)
        #expect(client.restoreError?.code == .sessionStoreFailed)
        try await client.register(email: server.uniqueEmail(), password: "correct horse battery")
        #expect(try server.client(store: store).currentUser != nil)
    }
}
