import ExosphereClient
import Foundation
import Testing

/// Sessions that end on the server: the client signs out and says so.
@Suite(.liveServer("expiry") { configuration in
    configuration.accounts.lifetime.idleSeconds = 3
})
struct SessionExpiryTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    @Test func anExpiredSessionSignsTheClientOutAndForgetsIt() async throws {
        let directory = try temporaryDirectory("expiry")
        let file = directory.appendingPathComponent("exosphere.session")
        let cache = directory.appendingPathComponent("images", isDirectory: true)
        let start = Date()
        let (client, email, password) = try await server.signedInClient(store: FileSessionStore(url: file)) {
            $0.imageCacheDirectory = cache
        }
        let image = try await client.uploadImage(ImagesTests.photo(3), contentType: .png)
        var events = client.authStateChanges().makeAsyncIterator()
        #expect(await events.next() == .initial(client.currentUser))

        // Idle longer than the server allows (its idle end counts from the session's start here:
        // `lastSeenAt` is written at most once a minute).
        let wait = max(0, start.addingTimeInterval(4.2).timeIntervalSinceNow)
        try await Task.sleep(nanoseconds: UInt64(wait * 1e9))
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
