import Foundation

#if canImport(AuthenticationServices)
import AuthenticationServices
#endif

/// A provider whose ID token signs in (`Exosphere.signIn(withApple:)`, `signIn(withGoogle:)`).
public enum IdentityProvider: String, Sendable, CaseIterable {
    case apple, google
}

/// An Apple or Google identity linked to the account.
public struct LinkedIdentity: Identifiable, Hashable, Sendable {
    public let id: String
    public let provider: IdentityProvider
    /// The address the provider gave when it was linked.
    public let email: String?
    public let createdAt: Date
    public let lastUsedAt: Date?

    init(json: JSONValue) throws {
        guard let id = json["id"]?.stringValue, let provider = json["provider"]?.stringValue.flatMap(IdentityProvider.init),
            let createdAt = json["createdAt"]?.stringValue.flatMap(Timestamp.parse)
        else { throw ExosphereError.invalidResponse("an identity without id, provider or createdAt") }
        (self.id, self.provider, self.createdAt) = (id, provider, createdAt)
        email = json["email"]?.stringValue
        lastUsedAt = json["lastUsedAt"]?.stringValue.flatMap(Timestamp.parse)
    }
}

/// One of the user's passkeys.
public struct Passkey: Identifiable, Hashable, Sendable {
    public let id: String
    public let name: String
    /// Synced by its provider (iCloud Keychain, Google Password Manager), not on one device only.
    public let backedUp: Bool
    public let createdAt: Date
    public let lastUsedAt: Date?

    init(json: JSONValue) throws {
        guard let id = json["id"]?.stringValue, let name = json["name"]?.stringValue,
            let createdAt = json["createdAt"]?.stringValue.flatMap(Timestamp.parse)
        else { throw ExosphereError.invalidResponse("a passkey without id, name or createdAt") }
        (self.id, self.name, self.createdAt) = (id, name, createdAt)
        backedUp = json["backedUp"]?.boolValue ?? false
        lastUsedAt = json["lastUsedAt"]?.stringValue.flatMap(Timestamp.parse)
    }
}

/// What the platform needs to make a passkey (from `PublicKeyCredentialCreationOptionsJSON`):
/// `ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier:)` and its
/// `createCredentialRegistrationRequest(challenge:name:userID:)`.
public struct PasskeyCreationOptions: Sendable {
    public let relyingPartyIdentifier: String
    public let challenge: Data
    public let userID: Data
    public let userName: String
    /// The user's passkeys: the platform must not make another on an authenticator holding one.
    public let excludedCredentialIDs: [Data]
    /// The options as the server sent them, for a web view's `parseCreationOptionsFromJSON`.
    public let json: Data
}

/// What the platform needs to sign in with a passkey (from `PublicKeyCredentialRequestOptionsJSON`).
public struct PasskeyRequestOptions: Sendable {
    public let relyingPartyIdentifier: String
    public let challenge: Data
    public let json: Data
}

/// A new passkey as the platform returned it (`ASAuthorizationPlatformPublicKeyCredentialRegistration`).
public struct PasskeyRegistration: Sendable {
    public var credentialID: Data
    public var rawClientDataJSON: Data
    public var rawAttestationObject: Data
    public var transports: [String]

    public init(credentialID: Data, rawClientDataJSON: Data, rawAttestationObject: Data, transports: [String] = []) {
        self.credentialID = credentialID
        self.rawClientDataJSON = rawClientDataJSON
        self.rawAttestationObject = rawAttestationObject
        self.transports = transports
    }

    /// `RegistrationResponseJSON`.
    var json: [String: JSONValue] {
        let id = JSONValue.string(credentialID.base64URL)
        return [
            "id": id, "rawId": id, "type": .string("public-key"),
            "response": .object([
                "clientDataJSON": .string(rawClientDataJSON.base64URL), "attestationObject": .string(rawAttestationObject.base64URL),
                "transports": .array(transports.map(JSONValue.string)),
            ]),
            "clientExtensionResults": .object([:]),
        ]
    }
}

/// A passkey sign-in as the platform returned it (`ASAuthorizationPlatformPublicKeyCredentialAssertion`).
public struct PasskeyAssertion: Sendable {
    public var credentialID: Data
    public var rawClientDataJSON: Data
    public var rawAuthenticatorData: Data
    public var signature: Data
    public var userID: Data?

    public init(credentialID: Data, rawClientDataJSON: Data, rawAuthenticatorData: Data, signature: Data, userID: Data?) {
        self.credentialID = credentialID
        self.rawClientDataJSON = rawClientDataJSON
        self.rawAuthenticatorData = rawAuthenticatorData
        self.signature = signature
        self.userID = userID
    }

    /// `AuthenticationResponseJSON`.
    var json: JSONValue {
        let id = JSONValue.string(credentialID.base64URL)
        return .object([
            "id": id, "rawId": id, "type": .string("public-key"),
            "response": .object([
                "clientDataJSON": .string(rawClientDataJSON.base64URL), "authenticatorData": .string(rawAuthenticatorData.base64URL),
                "signature": .string(signature.base64URL), "userHandle": userID.map { .string($0.base64URL) } ?? .null,
            ]),
            "clientExtensionResults": .object([:]),
        ])
    }
}

extension Exosphere {
    // MARK: - Sign in with Apple and Google

    /// A nonce for one Sign in with Apple or Google (`POST /users/signin/nonce`; single use, 5
    /// minutes): give the provider its SHA-256 in lowercase hex (`ASAuthorizationAppleIDRequest.nonce`,
    /// Google's `nonce`), then pass the nonce itself to `signIn(withApple:nonce:)`,
    /// `signIn(withGoogle:nonce:)` or `linkIdentity(_:idToken:nonce:)`. A server with
    /// `--id-token-nonce required` (the default) refuses a token without one.
    public func identityTokenNonce() async throws -> String {
        let response = try await send(APIRequest("POST", "/users/signin/nonce"))
        guard let nonce = try response.json()["nonce"]?.stringValue else { throw ExosphereError.invalidResponse("a nonce response without nonce") }
        return nonce
    }

    /// Signs in with the ID token Sign in with Apple gave the app (`ASAuthorizationAppleIDCredential.identityToken`);
    /// the first sign-in makes the account.
    ///
    /// - Parameter nonce: the nonce from `identityTokenNonce()` whose SHA-256 (hex) the app put in
    ///   the request.
    /// - Throws: `ExosphereError` `401 invalid_id_token`, `409 account_exists` (an account holds
    ///   the address: sign in to it and call `linkIdentity`), `404` when the server has Apple off,
    ///   `503 provider_unavailable`.
    @discardableResult
    public func signIn(withApple idToken: String, nonce: String? = nil) async throws -> User {
        try await signIn(with: .apple, idToken: idToken, nonce: nonce)
    }

    /// Signs in with Google Sign-In's ID token (`GIDGoogleUser.idToken.tokenString`).
    @discardableResult
    public func signIn(withGoogle idToken: String, nonce: String? = nil) async throws -> User {
        try await signIn(with: .google, idToken: idToken, nonce: nonce)
    }

    private func signIn(with provider: IdentityProvider, idToken: String, nonce: String?) async throws -> User {
        var body: [String: JSONValue] = ["idToken": .string(idToken)]
        if let nonce { body["nonce"] = .string(nonce) }
        let response = try await send(APIRequest("POST", "/users/signin/" + provider.rawValue, body: .json(.object(body))))
        return try begin(from: response)
    }

    /// The Apple and Google identities linked to the account, and whether it has a password.
    public func identities() async throws -> (identities: [LinkedIdentity], hasPassword: Bool) {
        let (response, _) = try await sendSignedIn(APIRequest("GET", "/users/me/identities"))
        let json = try response.json()
        guard let entries = json["identities"]?.arrayValue else { throw ExosphereError.invalidResponse("an identity list without identities") }
        return (try entries.map(LinkedIdentity.init(json:)), json["hasPassword"]?.boolValue ?? false)
    }

    /// Links an Apple or Google identity to the signed-in account.
    ///
    /// - Throws: `ExosphereError` `409 identity_taken` (linked to another account), `422 invalid_id_token`.
    @discardableResult
    public func linkIdentity(_ provider: IdentityProvider, idToken: String, nonce: String? = nil) async throws -> LinkedIdentity {
        var body: [String: JSONValue] = ["provider": .string(provider.rawValue), "idToken": .string(idToken)]
        if let nonce { body["nonce"] = .string(nonce) }
        let (response, _) = try await sendSignedIn(APIRequest("POST", "/users/me/identities", body: .json(.object(body))))
        return try LinkedIdentity(json: try response.json())
    }

    /// - Throws: `ExosphereError` `409 last_sign_in_method` when it is the account's last way in.
    public func unlinkIdentity(_ identity: LinkedIdentity) async throws {
        _ = try await sendSignedIn(APIRequest("DELETE", "/users/me/identities/" + APIRequest.segment(identity.id)))
    }

    // MARK: - Passkeys

    /// Starts registering a passkey for the signed-in user: hand the options to the platform.
    public func passkeyRegistrationOptions() async throws -> PasskeyCreationOptions {
        let (response, _) = try await sendSignedIn(APIRequest("POST", "/users/me/passkeys/registration/options"))
        let json = try response.json()
        guard let rp = json["rp"]?["id"]?.stringValue, let challenge = json["challenge"]?.stringValue.flatMap(Data.init(base64URL:)),
            let userID = json["user"]?["id"]?.stringValue.flatMap(Data.init(base64URL:)), let userName = json["user"]?["name"]?.stringValue
        else { throw ExosphereError.invalidResponse("creation options without rp, challenge or user") }
        let excluded = (json["excludeCredentials"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue.flatMap(Data.init(base64URL:)) }
        return PasskeyCreationOptions(
            relyingPartyIdentifier: rp, challenge: challenge, userID: userID, userName: userName, excludedCredentialIDs: excluded,
            json: response.body)
    }

    /// Registers what the platform made from `passkeyRegistrationOptions()`.
    ///
    /// - Throws: `ExosphereError` `422 invalid_passkey` (an expired or used challenge, another RP id, no user verification).
    @discardableResult
    public func registerPasskey(_ registration: PasskeyRegistration, name: String? = nil) async throws -> Passkey {
        var body = registration.json
        if let name { body["name"] = .string(name) }
        let request = APIRequest("POST", "/users/me/passkeys/registration", body: .json(.object(body)), isIdempotent: false)
        let (response, _) = try await sendSignedIn(request)
        return try Passkey(json: try response.json())
    }

    /// Starts a passkey sign-in: hand the options to the platform (no credential list: the user picks).
    public func passkeySignInOptions() async throws -> PasskeyRequestOptions {
        let response = try await send(APIRequest("POST", "/users/signin/passkey/options", isIdempotent: false))
        let json = try response.json()
        guard let rp = json["rpId"]?.stringValue, let challenge = json["challenge"]?.stringValue.flatMap(Data.init(base64URL:)) else {
            throw ExosphereError.invalidResponse("request options without rpId or challenge")
        }
        return PasskeyRequestOptions(relyingPartyIdentifier: rp, challenge: challenge, json: response.body)
    }

    /// Signs in with the platform's assertion for `passkeySignInOptions()`.
    ///
    /// - Throws: `ExosphereError` `401 invalid_credentials` for every refusal.
    @discardableResult
    public func signIn(withPasskey assertion: PasskeyAssertion) async throws -> User {
        let response = try await send(APIRequest("POST", "/users/signin/passkey", body: .json(assertion.json), isIdempotent: false))
        return try begin(from: response)
    }

    public func passkeys() async throws -> [Passkey] {
        let (response, _) = try await sendSignedIn(APIRequest("GET", "/users/me/passkeys"))
        guard let entries = try response.json()["passkeys"]?.arrayValue else {
            throw ExosphereError.invalidResponse("a passkey list without passkeys")
        }
        return try entries.map(Passkey.init(json:))
    }

    @discardableResult
    public func renamePasskey(_ passkey: Passkey, to name: String) async throws -> Passkey {
        let request = APIRequest("PATCH", "/users/me/passkeys/" + APIRequest.segment(passkey.id), body: .json(.object(["name": .string(name)])))
        let (response, _) = try await sendSignedIn(request)
        return try Passkey(json: try response.json())
    }

    /// - Throws: `ExosphereError` `409 last_sign_in_method` when it is the account's last way in.
    public func deletePasskey(_ passkey: Passkey) async throws {
        _ = try await sendSignedIn(APIRequest("DELETE", "/users/me/passkeys/" + APIRequest.segment(passkey.id)))
    }
}

extension Data {
    /// base64url without padding, as WebAuthn's JSON forms carry bytes.
    var base64URL: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    init?(base64URL text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}

#if canImport(AuthenticationServices)
@available(iOS 16.0, macOS 13.0, *)
extension PasskeyCreationOptions {
    /// The platform's request for these options, for an `ASAuthorizationController`.
    public func platformRequest() -> ASAuthorizationPlatformPublicKeyCredentialRegistrationRequest {
        let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: relyingPartyIdentifier)
        let request = provider.createCredentialRegistrationRequest(challenge: challenge, name: userName, userID: userID)
        request.userVerificationPreference = .required
        if #available(iOS 17.4, macOS 14.4, *) {
            request.excludedCredentials = excludedCredentialIDs.map { ASAuthorizationPlatformPublicKeyCredentialDescriptor(credentialID: $0) }
        }
        return request
    }
}

@available(iOS 16.0, macOS 13.0, *)
extension PasskeyRequestOptions {
    public func platformRequest() -> ASAuthorizationPlatformPublicKeyCredentialAssertionRequest {
        let provider = ASAuthorizationPlatformPublicKeyCredentialProvider(relyingPartyIdentifier: relyingPartyIdentifier)
        let request = provider.createCredentialAssertionRequest(challenge: challenge)
        request.userVerificationPreference = .required
        return request
    }
}

@available(iOS 16.0, macOS 13.0, *)
extension PasskeyRegistration {
    /// What the controller's delegate got; nil when the platform returned no attestation object.
    public init?(_ credential: ASAuthorizationPlatformPublicKeyCredentialRegistration) {
        guard let attestation = credential.rawAttestationObject else { return nil }
        self.init(
            credentialID: credential.credentialID, rawClientDataJSON: credential.rawClientDataJSON, rawAttestationObject: attestation,
            transports: ["internal", "hybrid"])
    }
}

@available(iOS 16.0, macOS 13.0, *)
extension PasskeyAssertion {
    public init(_ credential: ASAuthorizationPlatformPublicKeyCredentialAssertion) {
        self.init(
            credentialID: credential.credentialID, rawClientDataJSON: credential.rawClientDataJSON,
            rawAuthenticatorData: credential.rawAuthenticatorData, signature: credential.signature, userID: credential.userID)
    }
}

extension Exosphere {
    /// Signs in with what Sign in with Apple's controller returned.
    @discardableResult
    public func signIn(with credential: ASAuthorizationAppleIDCredential, nonce: String? = nil) async throws -> User {
        guard let data = credential.identityToken, let token = String(data: data, encoding: .utf8) else {
            throw ExosphereError(code: .invalidArgument, detail: "The Apple ID credential carries no identity token.")
        }
        return try await signIn(withApple: token, nonce: nonce)
    }
}
#endif
