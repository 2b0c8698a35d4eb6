import Accounts
import FoundationEssentials
import HTTP
import HTTPServer
import JSON

/// Sign in with Apple and Google (`POST /users/signin/apple|google`), and a user's linked
/// identities: list, link while signed in, unlink.
struct IdentitiesController: Controller {
    let accounts: AccountService
    let providers: IdentityProviders

    static func declare(_ routes: inout Routes<Self>) {
        // A nonce for one ID token (`issueIDTokenNonce`), counted per client address.
        routes.open(.post, "/users/signin/nonce", throttle: Throttling(.identityNonce, [.perAddress]), use: Self.nonce)
        // Forged tokens are counted like wrong passwords; a success gives its attempt back.
        for provider in IdentityProvider.allCases {
            routes.open(
                .post, "/users/signin/" + provider.rawValue, body: { controller in { call in try controller.idToken(call, provider) } },
                throttle: Throttling(.identityToken, [.perAddress], success: .givesBack()), use: Self.signIn)
        }
        routes.user(.get, "/users/me/identities", use: Self.list)
        // A way in is added or removed only by the holder of a verified address who proved a
        // credential recently, 10 times an hour at most (forged tokens included).
        let wayIn: Set<RoutePolicy.Requirement> = [.verifiedAddress, .recentAuthentication]
        routes.user(
            .post, "/users/me/identities", requires: wayIn, body: Self.linkRequest, throttle: Throttling(.signInMethodChange, [.perUser]),
            use: Self.link)
        routes.user(
            .delete, "/users/me/identities/{id}", requires: wayIn, throttle: Throttling(.signInMethodChange, [.perUser]), use: Self.unlink)
    }

    /// An ID token to check, and the provider that signed it.
    struct IDToken: Sendable {
        let provider: IdentityProvider
        let idToken: String
        let nonce: String?
    }

    /// `{"idToken": "…", "nonce": "…"?}`: a provider that is off is `404`, before anything is counted.
    func idToken(_ call: Call, _ provider: IdentityProvider) throws -> IDToken {
        guard providers.isOn(provider) else { throw AccountsError(.notFound, "\(provider.displayName) is not configured.") }
        let body = RequestBody(object: try JSONBody.object(call.request))
        try body.checkKeys(allowed: ["idToken", "nonce"])
        return IDToken(provider: provider, idToken: try body.string("idToken", required: true)!, nonce: try body.string("nonce"))
    }

    @Sendable func signIn(_ call: Call, _ token: IDToken) async throws -> Response {
        let verified = await providers.verify(token.provider, idToken: token.idToken, nonce: token.nonce)
        let issued = try accounts.signInMethods.signIn(with: token.provider, nonce: token.nonce, origin: call.origin) { try verified.get() }
        var response = JSONBody.response { UserJSON.writeSession(issued, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `200 {"nonce", "expiresAt"}`: single use, 5 minutes. The app hands the provider the
    /// nonce's SHA-256 in lowercase hex, and sends the nonce itself beside the ID token.
    @Sendable func nonce(_ call: Call) throws -> Response {
        let (nonce, expiresAt) = try accounts.signInMethods.issueIDTokenNonce()
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("nonce"); writer.string(nonce)
            writer.key("expiresAt"); writer.string(UserJSON.timestamp(expiresAt))
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func list(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let (hasPassword, identities, _) = try accounts.signInMethods.signInMethods(of: signedIn.user.id)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("identities")
            writer.beginArray()
            for identity in identities { Self.write(identity, into: &writer) }
            writer.endArray()
            writer.key("hasPassword"); writer.bool(hasPassword)
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `{"provider": "apple"|"google", "idToken": "…", "nonce": "…"?}` → `201` the identity (`200`
    /// when it was linked to this user already).
    @Sendable func linkRequest(_ call: Call) throws -> IDToken {
        let body = RequestBody(object: try JSONBody.object(call.request))
        try body.checkKeys(allowed: ["provider", "idToken", "nonce"])
        let providerText = try body.string("provider", required: true)!
        guard let provider = IdentityProvider(rawValue: providerText) else {
            throw AccountsError.field("provider", .invalidValue, "expected apple or google")
        }
        // As its sign-in route: a provider that is off is not found here, before anything is counted.
        guard providers.isOn(provider) else { throw AccountsError(.notFound, "\(provider.displayName) is not configured.") }
        return IDToken(provider: provider, idToken: try body.string("idToken", required: true)!, nonce: try body.string("nonce"))
    }

    @Sendable func link(_ call: Call, _ token: IDToken) async throws -> Response {
        let verified = await providers.verify(token.provider, idToken: token.idToken, nonce: token.nonce)
        let (linked, isNew) = try accounts.signInMethods.linkIdentity(userID: call.signedIn.user.id, nonce: token.nonce, origin: call.origin) {
            do {
                return try verified.get()
            } catch let error as AccountsError where error.code == .invalidIDToken {
                // Not a 401: the session is good, and a client that hears 401 signs its user out.
                throw AccountsError.field("idToken", .invalidIDToken, error.detail)
            }
        }
        var response = JSONBody.response(isNew ? .created : .ok) { Self.write(linked, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func unlink(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        guard let text = call.parameter("id"), let id = UUID(uuidString: text) else { throw AccountsError(.notFound, "No such identity.") }
        try accounts.signInMethods.unlinkIdentity(id: id, userID: signedIn.user.id, origin: call.origin)
        return Response(status: .noContent)
    }

    static func write(_ identity: LinkedIdentity, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id"); writer.string(identity.id.lowercasedText)
        writer.key("provider"); writer.string(identity.provider.rawValue)
        writer.key("email")
        if let email = identity.email { writer.string(email) } else { writer.null() }
        writer.key("createdAt"); writer.string(UserJSON.timestamp(identity.createdAt))
        writer.key("lastUsedAt")
        if let used = identity.lastUsedAt { writer.string(UserJSON.timestamp(used)) } else { writer.null() }
        writer.endObject()
    }
}
