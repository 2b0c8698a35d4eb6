import Cryptography
import FoundationEssentials
import JSON

/// An OpenID Connect ID token (a compact JWS, RFC 7515) whose signature and claims were checked:
/// what Sign in with Apple and Google Sign-In hand an app, which sends it to sign in.
public struct IDToken: Sendable {
    /// `iss`, `sub`, `aud` (one or several), `exp`, and what the providers add.
    public let issuer: String
    public let subject: String
    public let audiences: [String]
    public let expiresAt: Date
    public let email: String?
    /// `email_verified`, a boolean (Google) or the string `"true"` (Apple).
    public let emailVerified: Bool
    public let claims: JSONObject

    /// Why a token was refused, with a stable code.
    public enum Failure: Error, Equatable, Sendable {
        case malformed(String)
        case unsupportedAlgorithm(String)
        /// Its `kid` is not in the key set: the provider may have rotated its keys.
        case unknownKey(String)
        case badSignature
        case wrongIssuer(String)
        case wrongAudience
        /// Issued for several apps, and `azp` (the app it was issued to) is missing or not one of ours.
        case wrongAuthorizedParty
        case expired
        case notYetValid
        case nonceMismatch
    }

    /// What a token must say to be accepted.
    public struct Expectations: Sendable {
        public var issuers: Set<String>
        public var audiences: Set<String>
        /// How far the clocks may disagree, for `exp`, `iat` and `nbf`.
        public var skewSeconds: Double = 60
        public init(issuers: Set<String>, audiences: Set<String>) {
            self.issuers = issuers
            self.audiences = audiences
        }
    }

    /// Checks `token`'s signature with `keys` (RS256 or ES256, the key its `kid` names, of the
    /// algorithm its `alg` says), then its issuer, audience (and `azp` when there are several), expiry (`exp` after `now` less the
    /// skew; `iat` and `nbf`, when present, not after `now` plus the skew) and, when the app sent a
    /// nonce, that the token's `nonce` is the lowercase hex SHA-256 of it (as apps give Apple and
    /// Google the hash, and the server the nonce itself).
    public static func verify(
        _ token: String, keys: JSONWebKeySet, expecting expected: Expectations, nonce: String?, now: Date
    ) throws(Failure) -> IDToken {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 16_384 else { throw .malformed("not three base64url parts") }
        guard let headerBytes = Base64URL.decode(parts[0]), let payloadBytes = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2])
        else { throw .malformed("a part is not base64url") }
        guard let header = try? JSONParser.parse(headerBytes).objectValue, let claims = try? JSONParser.parse(payloadBytes).objectValue
        else { throw .malformed("the header or the payload is not a JSON object") }
        let algorithm = header["alg"]?.stringValue ?? ""
        guard let expectedAlgorithm = PublicKey.Algorithm(rawValue: algorithm) else { throw .unsupportedAlgorithm(algorithm) }
        guard let keyID = header["kid"]?.stringValue else { throw .malformed("no kid") }
        guard let key = keys.keys[keyID] else { throw .unknownKey(keyID) }
        guard key.algorithm == expectedAlgorithm else { throw .unsupportedAlgorithm(algorithm) }
        let signingInput = Array(parts[0].utf8) + [UInt8(ascii: ".")] + Array(parts[1].utf8)
        guard key.verifies(signature, of: signingInput) else { throw .badSignature }

        let issuer = claims["iss"]?.stringValue ?? ""
        guard expected.issuers.contains(issuer) else { throw .wrongIssuer(issuer) }
        let audiences: [String]
        switch claims["aud"] {
        case .string(let one): audiences = [one]
        case .array(let many): audiences = many.compactMap(\.stringValue)
        default: audiences = []
        }
        guard audiences.contains(where: expected.audiences.contains) else { throw .wrongAudience }
        // OpenID Connect Core 3.1.3.7: a token for several audiences names the one it was issued
        // to. With one audience `azp` is left alone (Google's names the app's own client there).
        if audiences.count > 1 {
            guard let party = claims["azp"]?.stringValue, expected.audiences.contains(party) else { throw .wrongAuthorizedParty }
        }
        guard let subject = claims["sub"]?.stringValue, !subject.isEmpty else { throw .malformed("no sub") }
        guard let expiry = claims["exp"]?.doubleValue else { throw .malformed("no exp") }
        let nowSeconds = now.timeIntervalSince1970
        guard expiry > nowSeconds - expected.skewSeconds else { throw .expired }
        for name in ["iat", "nbf"] {
            if let seconds = claims[name]?.doubleValue, seconds > nowSeconds + expected.skewSeconds { throw .notYetValid }
        }
        if let nonce {
            let hashed = Hex.encode(SHA256.hash(Array(nonce.utf8)))
            guard let claimed = claims["nonce"]?.stringValue, ConstantTime.equals(Array(claimed.utf8), Array(hashed.utf8)) else {
                throw .nonceMismatch
            }
        }
        let verified: Bool
        switch claims["email_verified"] {
        case .bool(let flag): verified = flag
        case .string(let text): verified = text == "true"
        default: verified = false
        }
        return IDToken(
            issuer: issuer, subject: subject, audiences: audiences, expiresAt: Date(timeIntervalSince1970: expiry),
            email: claims["email"]?.stringValue, emailVerified: verified, claims: claims)
    }
}
