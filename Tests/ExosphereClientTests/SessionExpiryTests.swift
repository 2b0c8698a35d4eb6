import ExosphereClient
import Foundation
import TestSupport
import Testing

/// Sessions that end on the server: the client signs out and says so.
@Suite(.testThreads, .liveServer("expiry"))
struct SessionExpiryTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    @Test func anExpiredSessionSignsTheClientOutAndForgetsIt() async throws {
        let directory = try temporaryDirectory("expiry")
        let file = directory.appendingPathComponent("exosphere.session")
        let cache = directory.appendingPathComponent("images", isDirectory: true)
        let (client, email, password) = try await server.signedInClient(store: FileSessionStore(url: file)) {
            $0.imageCacheDirectory = cache
        }
        let image = try await client.uploadImage(ImagesTests.photo(3), contentType: .png)
        var events = client.authStateChanges().makeAsyncIterator()
        #expect(await events.next() == .initial(client.currentUser))

        // The session reaches its end on the server: the server's clock moves past it (a year, its
        // absolute lifetime) rather than a test waiting, so that a loaded machine cannot end it
        // early or late. Its row is still there: only its time is up.
        server.advanceClock(by: 366 * 86_400)
        let sessions = try server.withDatabase { connection in
            try connection.query(
                "SELECT count(*) FROM sessions WHERE user_id = (SELECT id FROM users WHERE email_normalized = \(email.lowercased()))"
            )[0].decode(Int64.self, at: 0)
        }
        #expect(sessions == 1)
        let error = await exosphereError { _ = try await client.downloadImage(image) }
        #expect(error?.status == 401)
        #expect(error?.code == .invalidToken)
        #expect(error?.isSessionExpired == true)
        #expect(await events.next() == .sessionExpired)
        #expect(client.currentUser == nil)
        #expect(!client.isSignedIn)
        #expect(!FileManager.default.fileExists(atPath: file.path), "the dead token is not kept")
        #expect(!FileManager.default.fileExists(atPath: cache.appendingPathComponent(image.id).path))
        #expect(try server.client(store: FileSessionStore(url: file)).currentUser == nil, "signed out after a restart too")

        // The next call needs a sign-in, which works as before.
        let next = await exosphereError { _ = try await client.sessions() }
        #expect(next?.code == .notSignedIn)
        let user = try await client.signIn(email: email, password: password)
        #expect(await events.next() == .signedIn(user))
        #expect(try await client.downloadImage(image) == ImagesTests.photo(3))
    }
}
