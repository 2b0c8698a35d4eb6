import Cryptography
import Foundation
import IdentityTokens
import JSON
import TestSupport
import Testing

/// ID tokens signed by the `openssl` command with an RSA 2048 and a P-256 key, checked against a
/// key set made from those keys' parts: every check of `IDToken.verify` refuses what it must.
@Suite(.testThreads) struct IDTokenTests {
    static let issuer = "https://appleid.apple.com"
    static let audience = "com.example.app"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// The keys' files and the key set listing them (`rsa-1`, `ec-1`), with an encryption key and a
    /// key of an unknown type that must be left out.
    struct Keys {
        let directory: String
        let set: JSONWebKeySet
        let json: String
    }

    static let keys = Result { try makeKeys() }

    static func makeKeys() throws -> Keys {
        let directory = try makeTemporaryDirectory("exo-id-tokens")
        let openssl = "/usr/bin/openssl"
        _ = try run(openssl, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.pem"], in: directory)
        _ = try run(openssl, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec.pem"], in: directory)
        _ = try run(openssl, ["pkey", "-in", "ec.pem", "-pubout", "-outform", "DER", "-out", "ec.der"], in: directory)
        let modulusLine = try run(openssl, ["rsa", "-in", "rsa.pem", "-noout", "-modulus"], in: directory)
        let modulusHex = modulusLine.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: "")
        let modulus = try SigningKeys.bytes(hex: modulusHex)
        let point = Array(try #require(FileManager.default.contents(atPath: directory + "/ec.der")).suffix(65))
        let (n, e) = (Base64URL.encode(modulus), Base64URL.encode([1, 0, 1]))
        let (x, y) = (Base64URL.encode(Array(point[1...32])), Base64URL.encode(Array(point[33...64])))
        let json = """
            {"keys": [
              {"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256", "n": "\(n)", "e": "\(e)"},
              {"kty": "EC", "kid": "ec-1", "crv": "P-256", "x": "\(x)", "y": "\(y)"},
              {"kty": "RSA", "kid": "rsa-enc", "use": "enc", "n": "\(n)", "e": "\(e)"},
              {"kty": "RSA", "kid": "rsa-as-es", "alg": "ES256", "n": "\(n)", "e": "\(e)"},
              {"kty": "OKP", "kid": "ed-1", "crv": "Ed25519", "x": "\(x)"}
            ]}
            """
        return Keys(directory: directory, set: try JSONWebKeySet(json: Array(json.utf8)), json: json)
    }

    /// A compact JWS of `claims` with `header`, signed by the key in `keyFile` (ES256 signatures
    /// turned from OpenSSL's DER into JWS's r ‖ s).
    static func token(header: String, claims: String, keyFile: String) throws -> String {
        let keys = try Self.keys.get()
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let name = "input-\(UInt64.random(in: 0...UInt64.max))"
        try Data(input.utf8).write(to: URL(fileURLWithPath: keys.directory + "/" + name))
        _ = try run("/usr/bin/openssl", ["dgst", "-sha256", "-sign", keyFile, "-out", name + ".sig", name], in: keys.directory)
        var signature = [UInt8](try #require(FileManager.default.contents(atPath: keys.directory + "/" + name + ".sig")))
        if keyFile == "ec.pem" { signature = try SigningKeys.rawP256Signature(der: signature) }
        return input + "." + Base64URL.encode(signature)
    }

    static func claims(
        issuer: String = issuer, audience: String = #""com.example.app""#, expiresIn: Double = 600, issuedAgo: Double = 10,
        extra: String = #", "email": "ayu@privaterelay.appleid.com", "email_verified": "true""#
    ) -> String {
        let now = Self.now.timeIntervalSince1970
        let times = #""exp": \#(Int(now + expiresIn)), "iat": \#(Int(now - issuedAgo))"#
        return #"{"iss": "\#(issuer)", "aud": \#(audience), "sub": "001234.abcdef", \#(times)\#(extra)}"#
    }

    static let expected: IDToken.Expectations = {
        var expected = IDToken.Expectations(issuers: [issuer], audiences: [audience, "other.client"])
        expected.skewSeconds = 60
        return expected
    }()

    static func verify(_ token: String, nonce: String? = nil) throws -> IDToken {
        try IDToken.verify(token, keys: try keys.get().set, expecting: expected, nonce: nonce, now: now)
    }

    /// Why `token` is refused; nil when it is accepted.
    static func failure(_ token: String, nonce: String? = nil) throws -> IDToken.Failure? {
        let set = try keys.get().set
        do {
            _ = try IDToken.verify(token, keys: set, expecting: expected, nonce: nonce, now: now)
            return nil
        } catch {
            return error
        }
    }

    @Test func theKeySetKeepsOnlyUsableSigningKeys() throws {
        let keys = try Self.keys.get()
        #expect(Set(keys.set.keys.keys) == ["rsa-1", "ec-1"])
        #expect(keys.set.keys["rsa-1"]?.algorithm == .rs256)
        #expect(keys.set.keys["ec-1"]?.algorithm == .es256)
        #expect(throws: JSONWebKeySet.Invalid.self) { try JSONWebKeySet(json: Array(#"{"keys": []}"#.utf8)) }
        #expect(throws: JSONWebKeySet.Invalid.self) { try JSONWebKeySet(json: Array("not json".utf8)) }
        #expect(throws: JSONWebKeySet.Invalid.self) { try JSONWebKeySet(json: Array(#"{"kid": "x"}"#.utf8)) }
    }

    @Test func validRS256AndES256TokensAreAcceptedWithTheirClaims() throws {
        let rsa = try Self.token(header: #"{"alg": "RS256", "kid": "rsa-1"}"#, claims: Self.claims(), keyFile: "rsa.pem")
        let checked = try Self.verify(rsa)
        #expect(checked.subject == "001234.abcdef")
        #expect(checked.issuer == Self.issuer)
        #expect(checked.email == "ayu@privaterelay.appleid.com")
        #expect(checked.emailVerified, "Apple's \"true\" string")
        let ec = try Self.token(
            header: #"{"alg": "ES256", "kid": "ec-1"}"#,
            claims: Self.claims(audience: #"["someone.else", "other.client"]"#, extra: #", "azp": "other.client", "email_verified": false"#),
            keyFile: "ec.pem")
        let second = try Self.verify(ec)
        #expect(second.audiences == ["someone.else", "other.client"])
        #expect(!second.emailVerified)
        #expect(second.email == nil)
    }

    @Test func everyWrongPartIsRefusedWithItsReason() throws {
        let header = #"{"alg": "RS256", "kid": "rsa-1"}"#
        func signed(_ claims: String, _ header: String = header, key: String = "rsa.pem") throws -> String {
            try Self.token(header: header, claims: claims, keyFile: key)
        }
        #expect(try Self.failure(try signed(Self.claims(audience: #""someone.else""#))) == .wrongAudience)
        // Several audiences: `azp` must name one of ours; with one audience it is not looked at.
        let several = #"["com.example.app", "someone.else"]"#
        #expect(try Self.failure(try signed(Self.claims(audience: several))) == .wrongAuthorizedParty)
        #expect(try Self.failure(try signed(Self.claims(audience: several, extra: #", "azp": "someone.else""#))) == .wrongAuthorizedParty)
        #expect(try Self.failure(try signed(Self.claims(audience: several, extra: #", "azp": "com.example.app""#))) == nil)
        #expect(try Self.failure(try signed(Self.claims(extra: #", "azp": "an.android.client""#))) == nil)
        #expect(try Self.failure(try signed(Self.claims(issuer: "https://accounts.google.com"))) == .wrongIssuer("https://accounts.google.com"))
        #expect(try Self.failure(try signed(Self.claims(expiresIn: -61))) == .expired)
        #expect(try Self.failure(try signed(Self.claims(expiresIn: -30))) == nil, "within the clock skew")
        #expect(try Self.failure(try signed(Self.claims(issuedAgo: -120))) == .notYetValid)
        #expect(try Self.failure(try signed(Self.claims(), #"{"alg": "RS256", "kid": "rsa-2"}"#)) == .unknownKey("rsa-2"))
        #expect(try Self.failure(try signed(Self.claims(), #"{"alg": "none", "kid": "rsa-1"}"#)) == .unsupportedAlgorithm("none"))
        #expect(try Self.failure(try signed(Self.claims(), #"{"alg": "HS256", "kid": "rsa-1"}"#)) == .unsupportedAlgorithm("HS256"))
        // An ES256 header naming the RSA key: the key decides the algorithm, not the header.
        #expect(try Self.failure(try signed(Self.claims(), #"{"alg": "ES256", "kid": "rsa-1"}"#, key: "ec.pem")) == .unsupportedAlgorithm("ES256"))
        // Signed by the other key under this one's id.
        #expect(try Self.failure(try signed(Self.claims(), #"{"alg": "ES256", "kid": "ec-1"}"#, key: "rsa.pem")) == .badSignature)

        let good = try signed(Self.claims())
        let parts = good.split(separator: ".").map(String.init)
        let otherPayload = Base64URL.encode(Array(Self.claims(audience: #""other.client""#).utf8))
        #expect(try Self.failure(parts[0] + "." + otherPayload + "." + parts[2]) == .badSignature, "a payload swapped under a signature")
        #expect(try Self.failure(parts[0] + "." + parts[1] + ".") == .badSignature)
        #expect(try Self.failure(parts[0] + "." + parts[1]) == .malformed("not three base64url parts"))
        #expect(try Self.failure("a.b!.c") == .malformed("a part is not base64url"))
    }

    @Test func theNonceIsTheSHA256OfWhatTheAppSent() throws {
        let nonce = "a nonce the app made"
        let hashed = Hex.encode(SHA256.hash(Array(nonce.utf8)))
        let token = try Self.token(
            header: #"{"alg": "RS256", "kid": "rsa-1"}"#, claims: Self.claims(extra: #", "nonce": "\#(hashed)""#), keyFile: "rsa.pem")
        #expect(try Self.failure(token, nonce: nonce) == nil)
        #expect(try Self.failure(token, nonce: "another nonce") == .nonceMismatch)
        #expect(try Self.failure(token, nonce: hashed) == .nonceMismatch, "the hash itself is not the nonce")
        #expect(try Self.failure(token) == nil, "no nonce sent: none checked")
        let without = try Self.token(header: #"{"alg": "RS256", "kid": "rsa-1"}"#, claims: Self.claims(), keyFile: "rsa.pem")
        #expect(try Self.failure(without, nonce: nonce) == .nonceMismatch)
    }
}
