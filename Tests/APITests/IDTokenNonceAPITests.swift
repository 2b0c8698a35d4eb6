import API
import Cryptography
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

/// An ID token proven fresh (`../shared/API.md`, "Ways in, recent authentication, limits"): with
/// `--id-token-nonce required` (the default) it carries a nonce this server issued, once; and an
/// accepted token is refused again, on every instance, until it expires.
@Suite(.testThreads, .serialized)
struct IDTokenNonceAPITests {
    typealias Identities = IdentitySignInAPITests

    static func nonce(_ server: TestServer) throws -> String {
        let reply = try server.call("POST", "/users/signin/nonce")
        try #require(reply.status == 200, "\(reply.text)")
        #expect(reply.header("Cache-Control") == "no-store")
        #expect(reply.json["expiresAt"]?.stringValue != nil)
        return try #require(reply.json["nonce"]?.stringValue)
    }

    @Test func aTokenNeedsANonceThisServerIssuedAndSignsInOnce() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let server = try Identities.server("idtoken_nonce", provider) { $0.accounts.idTokenNonceRequired = true }
        defer { Identities.finish(server) }
        let email = server.uniqueEmail("nonce")

        // No nonce, or the app's own: refused, and no account is made.
        let bare = try Identities.signIn(server, try Identities.googleToken(subject: "g-nonce", email: email))
        #expect(bare.status == 401 && bare.code == "invalid_id_token", "\(bare.text)")
        let made = "an app's own nonce \(UUID())"
        let own = try Identities.signIn(server, try Identities.googleToken(subject: "g-nonce", email: email, nonce: made), nonce: made)
        #expect(own.status == 401 && own.code == "invalid_id_token", "\(own.text)")
        // An issued one whose hash the token does not carry: refused by the claim's check.
        let issued = try Self.nonce(server)
        #expect(issued.count == 43)
        let other = try Identities.signIn(server, try Identities.googleToken(subject: "g-nonce", email: email, nonce: made), nonce: issued)
        #expect(other.status == 401, "\(other.text)")

        // The issued nonce, in the token and beside it: signed in, by one of eight at once.
        let nonce = try Self.nonce(server)
        let token = try Identities.googleToken(subject: "g-nonce", email: email, nonce: nonce)
        let statuses = Mutex<[Int]>([])
        try onThreads(8) { _ in
            let reply = try Identities.signIn(server, token, nonce: nonce)
            statuses.withLock { $0.append(reply.status) }
        }
        #expect(statuses.withLock { $0.sorted() } == [200] + Array(repeating: 401, count: 7))
        #expect(try Identities.count(server, "SELECT count(*)::int8 FROM users") == 1)
        // The same token with a new nonce: used before (and its claim names the old one).
        let again = try Identities.signIn(server, token, nonce: try Self.nonce(server))
        #expect(again.status == 401, "\(again.text)")

        // A nonce lives 5 minutes.
        let late = try Self.nonce(server)
        server.advanceClock(by: 301)
        let expired = try Identities.signIn(server, try Identities.googleToken(subject: "g-nonce", email: email, nonce: late), nonce: late)
        #expect(expired.status == 401 && expired.code == "invalid_id_token", "\(expired.text)")
        let fresh = try Self.nonce(server)
        let signedIn = try Identities.signIn(server, try Identities.googleToken(subject: "g-nonce", email: email, nonce: fresh), nonce: fresh)
        #expect(signedIn.status == 200, "\(signedIn.text)")
    }

    /// With nonces optional, a token accepted on one instance is still refused on another.
    @Test func anAcceptedTokenIsRefusedAgainOnEveryInstance() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let first = try Identities.server("idtoken_replay_a", provider)
        defer { Identities.finish(first) }
        let second = try Identities.server("idtoken_replay_b", provider, sharingDatabaseWith: first)
        defer { Identities.finish(second) }
        let token = try Identities.googleToken(subject: "g-replay", email: first.uniqueEmail("replay"))
        #expect(try Identities.signIn(first, token).status == 200)
        let replayed = try Identities.signIn(second, token)
        #expect(replayed.status == 401 && replayed.code == "invalid_id_token", "\(replayed.text)")
        #expect(replayed.json["detail"]?.stringValue?.contains("used before") == true, "\(replayed.text)")
        // A new token of the same identity signs in: it is the token that is used up, not the identity.
        #expect(try Identities.signIn(second, try Identities.googleToken(subject: "g-replay", email: nil)).status == 200)
    }

    /// An account without a password proves itself again with an ID token of its own identity
    /// (its nonce and single use checked as at sign-in), and may then change its ways in.
    @Test func anAccountWithoutAPasswordReauthenticatesWithItsIdentity() throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let server = try Identities.server("idtoken_reauth", provider) { $0.accounts.idTokenNonceRequired = true }
        defer { Identities.finish(server) }
        let email = server.uniqueEmail("reauth")
        let first = try Self.nonce(server)
        let session = try Identities.signIn(server, try Identities.googleToken(subject: "g-reauth", email: email, nonce: first), nonce: first)
        let token = try #require(session.json["accessToken"]?.stringValue)
        server.advanceClock(by: 301)
        func link() throws -> Reply {
            let nonce = try Self.nonce(server)
            let other = try Identities.googleToken(subject: "g-reauth-2", email: server.uniqueEmail("second"), nonce: nonce)
            server.remember(token: other)
            return try server.call(
                "POST", "/users/me/identities", token: token, json: #"{"provider": "google", "idToken": "\#(other)", "nonce": "\#(nonce)"}"#)
        }
        #expect(try link().code == "reauthentication_required")
        func reauthenticate(subject: String) throws -> Reply {
            let nonce = try Self.nonce(server)
            let proof = try Identities.googleToken(subject: subject, email: nil, nonce: nonce)
            server.remember(token: proof)
            return try server.call(
                "POST", "/users/me/reauthenticate", token: token, json: #"{"provider": "google", "idToken": "\#(proof)", "nonce": "\#(nonce)"}"#)
        }
        // Another identity's token proves nothing of this account.
        let stranger = try reauthenticate(subject: "g-someone-else")
        #expect(stranger.status == 422 && stranger.code == "invalid_id_token", "\(stranger.text)")
        let proved = try reauthenticate(subject: "g-reauth")
        #expect(proved.status == 200 && proved.json["authenticatedAt"]?.stringValue != nil, "\(proved.text)")
        let linked = try link()
        #expect(linked.status == 201, "\(linked.text)")
    }
}
