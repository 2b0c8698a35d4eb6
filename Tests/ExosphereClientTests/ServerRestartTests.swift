import ExosphereClient
import Foundation
import TestSupport
import Testing

/// The server goes away in the middle of a session and comes back on the same port and database.
@Suite(.testThreads, .liveServer("restart"))
struct ServerRestartTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    /// Connections that failed while being made, in this network namespace (`AttemptFails` of
    /// /proc/net/snmp): a connect to a port nobody listens on, refused, is one.
    static func failedConnects() throws -> Int {
        let lines = try String(contentsOfFile: "/proc/net/snmp", encoding: .utf8).split(separator: "\n").filter { $0.hasPrefix("Tcp:") }
        let names = lines.first?.split(separator: " ") ?? []
        let values = lines.dropFirst().first?.split(separator: " ") ?? []
        guard let index = names.firstIndex(of: "AttemptFails"), index < values.count, let count = Int(values[index]) else {
            throw LiveServerError("no Tcp AttemptFails in /proc/net/snmp")
        }
        return count
    }

    @Test func aServerRestartedMidUseIsPickedUpWhereItLeftOff() async throws {
        let cache = try temporaryDirectory("restart-cache")
        let (client, email, password) = try await server.signedInClient(firstname: "Ayu") { $0.imageCacheDirectory = cache }
        let image = try await client.uploadImage(ImagesTests.photo(7), contentType: .png)
        var user = try await client.fetchUser()

        server.stop()
        // While it is down: a network error after the few quick retries, and the session is kept.
        let down = await exosphereError { _ = try await client.fetchUser() }
        #expect(down?.code == .networkError)
        #expect(down?.status == nil)
        #expect(client.isSignedIn, "a network error is no reason to sign out")
        #expect(client.currentUser == user)

        // A request sent while it restarts is retried until it is back.
        let patient = try server.client { $0.retryPolicy = Client.RetryPolicy(maxRetries: 8, networkRetryDelay: 0.1) }
        let refusedBefore = try Self.failedConnects()
        let signingIn = Task { try await patient.signIn(email: email, password: password) }
        // Back only once two connections were refused meanwhile: the sign-in's first try and its
        // first retry. (The count is the network namespace's: another test's refused connections
        // can end this wait early, and then the sign-in may find the server back at once.)
        try await waitUntil { try Self.failedConnects() >= refusedBefore + 2 }
        try server.start()
        #expect(try await signingIn.value.id == user.id, "the sign-in reached the restarted server")

        // The old connection is gone; the session, the ETag and the cached image are still good.
        let notModified = try await server.requests("GET", "/users/me", 304)
        #expect(try await client.fetchUser() == user)
        #expect(try await server.requests("GET", "/users/me", 304) == notModified + 1)
        #expect(try await client.downloadImage(image) == ImagesTests.photo(7))
        #expect(try await server.requests("GET", "/users/me/images/{id}", 304) == 1)
        user.lastname = "Lestari"
        user = try await client.save(user)
        #expect(user.lastname == "Lestari")
        let second = try await client.uploadImage(ImagesTests.photo(8), contentType: .png)
        var listed: [UserImage] = []
        for try await image in client.images() { listed.append(image) }
        #expect(listed == [image, second])
    }
}
