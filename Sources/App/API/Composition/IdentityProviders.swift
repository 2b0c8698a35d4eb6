import Accounts
import Cryptography
import FoundationEssentials
import IdentityTokens
import JSON
import Outbound

/// Sign in with Apple and Google: which apps' tokens are accepted (`--apple-client-ids`,
/// `--google-client-ids`; a provider without ids is off) and where each provider's keys are
/// (`--apple-jwks-url`, `--google-jwks-url`: `https`, or `http` to a loopback address only).
public struct IdentityProviderConfiguration: Sendable {
    public struct Provider: Sendable {
        public var clientIDs: [String] = []
        public var keySetURL: String
        /// PEM certificates to trust for the key set's host instead of the system's (a private CA).
        public var caFile: String?
        public init(keySetURL: String) { self.keySetURL = keySetURL }
    }

    public var apple = Provider(keySetURL: "https://appleid.apple.com/auth/keys")
    public var google = Provider(keySetURL: "https://www.googleapis.com/oauth2/v3/certs")
    /// How long fetched keys are kept, and how often a failure or an unknown key may fetch again.
    public var keyTiming = KeySetCache.Timing()
    /// Each fetch of a key set must be done within this.
    public var fetchTimeout: Duration = .seconds(5)

    public init() {}

    public subscript(provider: IdentityProvider) -> Provider {
        get { provider == .apple ? apple : google }
        set { if provider == .apple { apple = newValue } else { google = newValue } }
    }

    /// A key set URL's problem, or nil when it may be used.
    public static func problem(keySetURL: String) -> String? {
        guard let target = HTTPGet.Target(keySetURL) else { return "expected an http(s) URL, got '\(keySetURL.prefix(200))'" }
        guard target.isSecure || target.isLoopback else { return "a key set is fetched over https (http to a loopback address only)" }
        return nil
    }
}

/// The providers that are on, each with its key set's cache: checks an ID token and says who it names.
final class IdentityProviders: Sendable {
    private struct Provider: Sendable {
        let keys: KeySetCache
        let expectations: IDToken.Expectations
    }

    private let providers: [IdentityProvider: Provider]

    init(_ configuration: IdentityProviderConfiguration) {
        var providers: [IdentityProvider: Provider] = [:]
        for provider in IdentityProvider.allCases {
            let settings = configuration[provider]
            guard !settings.clientIDs.isEmpty, let target = HTTPGet.Target(settings.keySetURL) else { continue }
            let (caFile, timeout) = (settings.caFile, configuration.fetchTimeout)
            let keys = KeySetCache(timing: configuration.keyTiming) {
                let response = try HTTPGet.fetch(target, caFile: caFile, timeout: timeout, maximumBytes: 256 << 10)
                guard response.status == 200 else { throw OutboundError(.protocolError, "the key set's server answered \(response.status)") }
                return KeySetCache.Fetched(body: response.body, cacheControl: response.header("cache-control"))
            }
            providers[provider] = Provider(
                keys: keys, expectations: IDToken.Expectations(issuers: Self.issuers(provider), audiences: Set(settings.clientIDs)))
        }
        self.providers = providers
    }

    /// The issuers each provider's tokens carry (Google's with and without the scheme).
    static func issuers(_ provider: IdentityProvider) -> Set<String> {
        switch provider {
        case .apple: ["https://appleid.apple.com"]
        case .google: ["https://accounts.google.com", "accounts.google.com"]
        }
    }

    func isOn(_ provider: IdentityProvider) -> Bool { providers[provider] != nil }

    /// How many times the provider's key set was fetched (0 when it is off).
    func fetchCount(_ provider: IdentityProvider) -> Int { providers[provider]?.keys.fetchCount ?? 0 }

    /// The identity `idToken` names, or why not, for a service that checks it inside its own steps.
    func verify(_ provider: IdentityProvider, idToken: String, nonce: String?) async -> Result<ProviderIdentity, any Error> {
        do {
            return .success(try await verifying(provider, idToken: idToken, nonce: nonce))
        } catch {
            return .failure(error)
        }
    }

    /// The identity `idToken` names: `401 invalid_id_token` for any fault of the token (the reason
    /// is in the detail, no claim of it), `503 provider_unavailable` when no key set was ever fetched.
    /// A token of a key not yet fetched may wait up to the key set's `longestWait`, suspended.
    private func verifying(_ provider: IdentityProvider, idToken: String, nonce: String?) async throws -> ProviderIdentity {
        guard let settings = providers[provider] else { throw AccountsError(.notFound, "\(provider.displayName) is not configured.") }
        let token: IDToken
        do {
            token = try await settings.keys.verify(idToken, expecting: settings.expectations, nonce: nonce)
        } catch let failure as IDToken.Failure {
            throw AccountsError(.invalidIDToken, "The ID token was refused: \(Self.reason(failure)).")
        } catch is KeySetCache.Unavailable {
            throw AccountsError(
                .providerUnavailable, "\(provider.displayName) cannot be checked now: its keys could not be fetched.", retryAfterSeconds: 5)
        }
        // Refused again until no check could accept it: its `exp` plus the clocks' skew.
        return ProviderIdentity(
            provider: provider, subject: token.subject, email: token.email, emailVerified: token.emailVerified,
            givenName: token.claims["given_name"]?.stringValue, familyName: token.claims["family_name"]?.stringValue,
            tokenHash: SHA256.hash(Array(idToken.utf8)), expiresAt: token.expiresAt.addingTimeInterval(settings.expectations.skewSeconds))
    }

    private static func reason(_ failure: IDToken.Failure) -> String {
        switch failure {
        case .malformed: "malformed"
        case .unsupportedAlgorithm: "unsupported algorithm"
        case .unknownKey: "signed by an unknown key"
        case .badSignature: "bad signature"
        case .wrongIssuer: "wrong issuer"
        case .wrongAudience: "issued for another app"
        case .wrongAuthorizedParty: "issued to another app"
        case .expired: "expired"
        case .notYetValid: "not valid yet"
        case .nonceMismatch: "nonce mismatch"
        }
    }
}
