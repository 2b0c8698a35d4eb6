import ExosphereClient
import Foundation
import TestSupport
import Testing

/// Guests and codes by mail through the client: `signInAsGuest()`, the upgrade (an address saved
/// and its link, then `setPassword`), `sendSignInCode(to:)` and `signIn(email:code:)`.
@Suite(.testThreads, .liveServer("guests"), .serialized)
struct GuestTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    @Test func aGuestUpgradesInPlaceAndSignsInAgainWithItsPassword() async throws {
        let phone = try server.client()
        let guest = try await phone.signInAsGuest(firstname: "Tamu", data: ["level": 3])
        #expect(guest.isGuest && guest.email == nil && guest.firstname == "Tamu" && guest.integer(forKey: "level") == 3)
        #expect(phone.currentUser?.isGuest == true)
        let noAddress = await exosphereError { try await phone.setPassword("a first password") }
        #expect(noAddress?.status == 409 && noAddress?.code == .noAddress)

        var user = try await phone.fetchUser()
        let address = server.uniqueEmail("tamu")
        user.email = address
        let saved = try await phone.save(user)
        #expect(saved.pendingEmail == address && saved.isGuest)
        let link = try #require(Client.recoveryLink(from: try await server.mailedLink(to: address, path: "verify-email")))
        let confirmed = try await phone.confirmEmailChange(token: link.token)
        #expect(confirmed.id == guest.id && confirmed.email == address && !confirmed.isGuest)
        #expect(try await phone.fetchUser().integer(forKey: "level") == 3, "the fields came along")
        try await phone.setPassword("a first password")

        let tablet = try server.client()
        let signedIn = try await tablet.signIn(email: address, password: "a first password")
        #expect(signedIn.id == guest.id && !signedIn.isGuest)
    }

    @Test func aMailedCodeSignsInOnce() async throws {
        let (phone, email, _) = try await server.signedInClient()
        let id = try #require(phone.currentUser?.id)
        let tablet = try server.client()
        try await tablet.sendSignInCode(to: email)
        try await tablet.sendSignInCode(to: server.uniqueEmail("nobody"))  // the same answer
        let code = try await server.mailedCode(to: email)
        let user = try await tablet.signIn(email: email, code: code)
        #expect(user.id == id && user.emailVerified && tablet.isSignedIn)
        let replayed = await exosphereError { try await server.client().signIn(email: email, code: code) }
        #expect(replayed?.status == 401 && replayed?.code == .invalidCode)
    }
}
