import Accounts
import Cryptography
import FoundationEssentials
import HTTP
import HTTPServer
import JSON
import Synchronization
import WebAuthn

/// Which RP id and origins passkeys are for: `--webauthn-rp-id` (default: the public URL's
/// host), `--webauthn-origins` (default: the public URL's origin), the RP's name (the app's name).
public struct WebAuthnConfiguration: Sendable {
    public var rpID: String?
    public var origins: [String] = []
    public init() {}
}

/// The relying party of this instance, known once the server has its port (the default public
/// URL names it).
final class RelyingPartySource: Sendable {
    private let party = Mutex<RelyingParty?>(nil)

    /// Resolves the party from `configuration` with the bound `port`.
    func resolve(_ configuration: Configuration, port: Int) {
        let publicURL = configuration.resolvedPublicURL(port: port)
        let origin = Self.origin(of: publicURL)
        let host = Self.host(of: origin)
        let resolved = RelyingParty(
            id: configuration.webAuthn.rpID ?? host, name: configuration.mail.appName,
            origins: Set(configuration.webAuthn.origins.isEmpty ? [origin] : configuration.webAuthn.origins))
        party.withLock { $0 = resolved }
    }

    var current: RelyingParty {
        get throws {
            guard let party = party.withLock({ $0 }) else { throw Problem.serviceUnavailable(code: .notReady) }
            return party
        }
    }

    /// `scheme://host[:port]` of a URL.
    static func origin(of url: String) -> String {
        guard let schemeEnd = url.firstRange(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        return String(url[..<schemeEnd.upperBound]) + rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
    }

    /// The host of an origin, without brackets or port.
    static func host(of origin: String) -> String {
        let authority = origin.firstRange(of: "://").map { String(origin[$0.upperBound...]) } ?? origin
        if authority.hasPrefix("["), let close = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<close])
        }
        return String(authority.prefix { $0 != ":" })
    }
}

/// Passkeys: registration and management by the signed-in user, sign-in by anyone. The bodies
/// are the WebAuthn JSON forms (`PublicKeyCredential.toJSON()`, base64url without padding).
struct PasskeysController: Controller {
    let accounts: AccountService
    let party: RelyingPartySource

    static func declare(_ routes: inout Routes<Self>) {
        // A way in is added or removed only by the holder of a verified address who proved a
        // credential recently, 10 times an hour at most.
        let wayIn: Set<RoutePolicy.Requirement> = [.verifiedAddress, .recentAuthentication]
        let changes = Throttling<Void>(.signInMethodChange, [.perUser])
        routes.user(.post, "/users/me/passkeys/registration/options", requires: wayIn, use: Self.registrationOptions)
        routes.user(.post, "/users/me/passkeys/registration", requires: wayIn, throttle: changes, use: Self.registration)
        routes.user(.get, "/users/me/passkeys", use: Self.list)
        routes.user(.patch, "/users/me/passkeys/{id}", use: Self.rename)
        routes.user(.delete, "/users/me/passkeys/{id}", requires: wayIn, throttle: changes, use: Self.delete)
        // Each challenge counts per client address; an assertion counts as a guess, and a success
        // gives its attempt back.
        routes.open(.post, "/users/signin/passkey/options", throttle: Throttling(.passkeyChallenge, [.perAddress]), use: Self.signInOptions)
        routes.open(
            .post, "/users/signin/passkey", body: Self.assertion, throttle: Throttling(.passkeySignIn, [.perAddress], success: .givesBack()),
            use: Self.signIn)
    }

    /// How long the browser may take, in milliseconds (the challenge lives 5 minutes).
    static let timeout = 300_000

    /// `PublicKeyCredentialCreationOptionsJSON`: a discoverable credential (resident key required),
    /// the user verified, ES256 or RS256, no attestation asked for, the user's passkeys excluded.
    @Sendable func registrationOptions(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let party = try party.current
        let (challenge, existing) = try accounts.signInMethods.passkeyRegistrationChallenge(userID: signedIn.user.id)
        let user = signedIn.user
        let displayName = [user.firstname, user.lastname].filter { !$0.isEmpty }.joined(separator: " ")
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("rp")
            writer.beginObject()
            writer.key("id"); writer.string(party.id)
            writer.key("name"); writer.string(party.name)
            writer.endObject()
            writer.key("user")
            writer.beginObject()
            writer.key("id"); writer.string(Base64URL.encode(SignInMethods.userHandle(user.id)))
            // A guest has no address: the name shown in the passkey's list is the user's name, or "Guest".
            let name = user.email ?? (displayName.isEmpty ? "Guest" : displayName)
            writer.key("name"); writer.string(name)
            writer.key("displayName"); writer.string(displayName.isEmpty ? name : displayName)
            writer.endObject()
            writer.key("challenge"); writer.string(Base64URL.encode(challenge))
            writer.key("pubKeyCredParams")
            writer.beginArray()
            for algorithm in [COSEKey.es256, COSEKey.rs256] {
                writer.beginObject()
                writer.key("type"); writer.string("public-key")
                writer.key("alg"); writer.int(algorithm)
                writer.endObject()
            }
            writer.endArray()
            writer.key("timeout"); writer.int(Self.timeout)
            writer.key("excludeCredentials")
            Self.writeDescriptors(existing, into: &writer)
            writer.key("authenticatorSelection")
            writer.beginObject()
            writer.key("residentKey"); writer.string("required")
            writer.key("requireResidentKey"); writer.bool(true)
            writer.key("userVerification"); writer.string("required")
            writer.endObject()
            writer.key("attestation"); writer.string("none")
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `RegistrationResponseJSON` and an optional `name`: `201` the passkey.
    @Sendable func registration(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let body = try JSONBody.object(call.request)
        let (credential, response) = try Self.credential(body, allowing: ["name"])
        let registration = PasskeyRegistration(
            credentialID: credential, clientDataJSON: try Self.bytes(response, "clientDataJSON"),
            attestationObject: try Self.bytes(response, "attestationObject"),
            transports: response["transports"]?.arrayValue?.compactMap(\.stringValue) ?? [],
            name: try Self.name(body))
        let passkey = try accounts.signInMethods.registerPasskey(
            registration, userID: signedIn.user.id, party: try party.current, origin: call.origin)
        var answer = JSONBody.response(.created) { Self.write(passkey, into: &$0) }
        answer.headers.add(name: "Location", value: "/users/me/passkeys/" + passkey.id.lowercasedText)
        return answer
    }

    @Sendable func list(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let passkeys = try accounts.signInMethods.passkeys(of: signedIn.user.id)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("passkeys")
            writer.beginArray()
            for passkey in passkeys { Self.write(passkey, into: &writer) }
            writer.endArray()
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `{"name": "…"}`.
    @Sendable func rename(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let body = RequestBody(object: try JSONBody.object(call.request))
        try body.checkKeys(allowed: ["name"])
        let renamed = try accounts.signInMethods.renamePasskey(
            id: try Self.id(call), userID: signedIn.user.id, name: try body.string("name", required: true)!)
        return JSONBody.response { Self.write(renamed, into: &$0) }
    }

    @Sendable func delete(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        try accounts.signInMethods.deletePasskey(id: try Self.id(call), userID: signedIn.user.id, origin: call.origin)
        return Response(status: .noContent)
    }

    /// `PublicKeyCredentialRequestOptionsJSON`: no `allowCredentials` (the authenticator offers
    /// the user's discoverable passkeys), the user verified.
    @Sendable func signInOptions(_ call: Call) throws -> Response {
        let party = try party.current
        let challenge = try accounts.signInMethods.passkeySignInChallenge(origin: call.origin)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("challenge"); writer.string(Base64URL.encode(challenge))
            writer.key("timeout"); writer.int(Self.timeout)
            writer.key("rpId"); writer.string(party.id)
            writer.key("allowCredentials"); writer.beginArray(); writer.endArray()
            writer.key("userVerification"); writer.string("required")
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `AuthenticationResponseJSON`: the session body.
    @Sendable func assertion(_ call: Call) throws -> PasskeyAssertion {
        try Self.assertion(try JSONBody.object(call.request))
    }

    /// An `AuthenticationResponseJSON` object.
    static func assertion(_ body: JSONObject) throws -> PasskeyAssertion {
        let (credential, response) = try Self.credential(body, allowing: [])
        let userHandle = try response["userHandle"].flatMap { value -> [UInt8]? in
            if case .null = value { return nil }
            return try Self.bytes(response, "userHandle")
        }
        return PasskeyAssertion(
            credentialID: credential, clientDataJSON: try Self.bytes(response, "clientDataJSON"),
            authenticatorData: try Self.bytes(response, "authenticatorData"), signature: try Self.bytes(response, "signature"),
            userHandle: userHandle)
    }

    @Sendable func signIn(_ call: Call, _ assertion: PasskeyAssertion) throws -> Response {
        let issued = try accounts.signInMethods.signIn(with: assertion, party: try party.current, origin: call.origin)
        var answer = JSONBody.response { UserJSON.writeSession(issued, into: &$0) }
        answer.headers.add(name: "Cache-Control", value: "no-store")
        return answer
    }

    // MARK: - The WebAuthn JSON forms

    /// The credential's raw id (`rawId`, equal to `id`) and its `response` object, `type` checked.
    static func credential(_ body: JSONObject, allowing extra: Set<String>) throws -> ([UInt8], JSONObject) {
        try RequestBody(object: body).checkKeys(
            allowed: Set(["id", "rawId", "type", "response", "authenticatorAttachment", "clientExtensionResults"]).union(extra))
        guard body["type"]?.stringValue == "public-key" else { throw AccountsError.field("type", .invalidValue, "expected public-key") }
        guard let response = body["response"]?.objectValue else { throw AccountsError.field("response", .invalidType, "expected an object") }
        let raw = try bytes(body, "rawId")
        guard body["id"]?.stringValue.flatMap({ Base64URL.decode($0) }) == raw else {
            throw AccountsError.field("id", .invalidValue, "expected the rawId")
        }
        return (raw, response)
    }

    /// A base64url member of `object`, decoded.
    static func bytes(_ object: JSONObject, _ key: String) throws -> [UInt8] {
        guard let text = object[key]?.stringValue else { throw AccountsError.field(key, .invalidType, "expected base64url text") }
        guard text.utf8.count <= 65_536, let bytes = Base64URL.decode(text) else {
            throw AccountsError.field(key, .invalidValue, "expected base64url text")
        }
        return bytes
    }

    /// The registration's optional `name`.
    static func name(_ body: JSONObject) throws -> String? {
        switch body["name"] {
        case nil, .null?: return nil
        case .string(let name)?: return name
        default: throw AccountsError.field("name", .invalidType, "expected a string")
        }
    }

    static func id(_ call: Call) throws -> UUID {
        guard let text = call.parameter("id"), let id = UUID(uuidString: text) else { throw AccountsError(.notFound, "No such passkey.") }
        return id
    }

    static func writeDescriptors(_ passkeys: [Passkey], into writer: inout JSONWriter) {
        writer.beginArray()
        for passkey in passkeys {
            writer.beginObject()
            writer.key("type"); writer.string("public-key")
            writer.key("id"); writer.string(Base64URL.encode(passkey.credentialID))
            if !passkey.transports.isEmpty {
                writer.key("transports")
                writer.beginArray()
                for transport in passkey.transports { writer.string(transport) }
                writer.endArray()
            }
            writer.endObject()
        }
        writer.endArray()
    }

    static func write(_ passkey: Passkey, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id"); writer.string(passkey.id.lowercasedText)
        writer.key("name"); writer.string(passkey.name)
        writer.key("backedUp"); writer.bool(passkey.backedUp)
        writer.key("createdAt"); writer.string(UserJSON.timestamp(passkey.createdAt))
        writer.key("lastUsedAt")
        if let used = passkey.lastUsedAt { writer.string(UserJSON.timestamp(used)) } else { writer.null() }
        writer.endObject()
    }
}
