import Cryptography
import JSON

/// A provider's signing keys, as its JWKS document (RFC 7517) lists them, by key id: RSA keys
/// (`kty` `RSA`, `n`, `e`) and P-256 keys (`kty` `EC`, `crv` `P-256`, `x`, `y`). Keys for
/// encryption (`use` `enc`), of other types or curves, without a `kid`, or whose parts make no
/// acceptable key (`PublicKey`) are left out; a document with none left is refused.
public struct JSONWebKeySet: Sendable {
    public let keys: [String: PublicKey]

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    public init(keys: [String: PublicKey]) {
        self.keys = keys
    }

    /// Parses a JWKS document (`{"keys": [...]}`).
    public init(json: [UInt8]) throws(Invalid) {
        let document: JSONValue
        do {
            document = try JSONParser.parse(json)
        } catch {
            throw Invalid(description: "the key set is not JSON: \(error)")
        }
        guard let entries = document["keys"]?.arrayValue else { throw Invalid(description: "the key set has no \"keys\" array") }
        var keys: [String: PublicKey] = [:]
        for entry in entries {
            guard let id = entry["kid"]?.stringValue, keys[id] == nil, entry["use"]?.stringValue ?? "sig" == "sig",
                let key = Self.key(entry)
            else { continue }
            if let algorithm = entry["alg"]?.stringValue, algorithm != key.algorithm.rawValue { continue }
            keys[id] = key
        }
        guard !keys.isEmpty else { throw Invalid(description: "the key set has no usable signing key") }
        self.keys = keys
    }

    private static func key(_ entry: JSONValue) -> PublicKey? {
        func bytes(_ name: String) -> [UInt8]? { entry[name]?.stringValue.flatMap { Base64URL.decode($0) } }
        switch entry["kty"]?.stringValue {
        case "RSA":
            guard let modulus = bytes("n"), let exponent = bytes("e") else { return nil }
            return PublicKey.rsa(modulus: modulus, exponent: exponent)
        case "EC":
            guard entry["crv"]?.stringValue == "P-256", let x = bytes("x"), let y = bytes("y") else { return nil }
            return PublicKey.p256(x: x, y: y)
        default:
            return nil
        }
    }
}
