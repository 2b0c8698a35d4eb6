import Cryptography
import Foundation
import TestSupport
import Testing

/// `PublicKey` against keys and signatures made by the `openssl` command: what OpenSSL signed
/// verifies, anything changed does not, and parts that make no acceptable key make none.
@Suite(.testThreads) struct PublicKeyTests {
    /// An RSA 2048 and a P-256 key, a message, and each key's signature of it (`openssl dgst`).
    struct Material {
        let rsaModulus: [UInt8]
        let ecPoint: [UInt8]
        let message: [UInt8]
        let rsaSignature: [UInt8]
        /// DER, as `openssl dgst` writes it.
        let ecSignature: [UInt8]
        let weakRSAModulus: [UInt8]
    }

    static let material = Result { try make() }

    static func make() throws -> Material {
        let directory = try makeTemporaryDirectory("exo-public-keys")
        func file(_ name: String) throws -> [UInt8] {
            try [UInt8](#require(FileManager.default.contents(atPath: directory + "/" + name)))
        }
        let openssl = "/usr/bin/openssl"
        try Array("an ID token's header.payload".utf8).withUnsafeBytes {
            try Data($0).write(to: URL(fileURLWithPath: directory + "/message"))
        }
        _ = try run(openssl, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "rsa.pem"], in: directory)
        _ = try run(openssl, ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", "weak.pem"], in: directory)
        _ = try run(openssl, ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec.pem"], in: directory)
        _ = try run(openssl, ["pkey", "-in", "ec.pem", "-pubout", "-outform", "DER", "-out", "ec.der"], in: directory)
        _ = try run(openssl, ["dgst", "-sha256", "-sign", "rsa.pem", "-out", "rsa.sig", "message"], in: directory)
        _ = try run(openssl, ["dgst", "-sha256", "-sign", "ec.pem", "-out", "ec.sig", "message"], in: directory)
        func modulus(_ key: String) throws -> [UInt8] {
            let line = try run(openssl, ["rsa", "-in", key, "-noout", "-modulus"], in: directory)
            return try SigningKeys.bytes(hex: line.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: ""))
        }
        // The last 65 bytes of a P-256 SubjectPublicKeyInfo are its uncompressed point.
        return Material(
            rsaModulus: try modulus("rsa.pem"), ecPoint: Array(try file("ec.der").suffix(65)), message: try file("message"),
            rsaSignature: try file("rsa.sig"), ecSignature: try file("ec.sig"), weakRSAModulus: try modulus("weak.pem"))
    }

    static let exponent: [UInt8] = [0x01, 0x00, 0x01]

    @Test func anRSASignatureOfOpenSSLVerifiesAndNothingChangedDoes() throws {
        let material = try Self.material.get()
        let key = try #require(PublicKey.rsa(modulus: material.rsaModulus, exponent: Self.exponent))
        #expect(key.algorithm == .rs256)
        #expect(key.verifies(material.rsaSignature, of: material.message))
        var message = material.message
        message[0] ^= 1
        #expect(!key.verifies(material.rsaSignature, of: message))
        var signature = material.rsaSignature
        signature[100] ^= 0x40
        #expect(!key.verifies(signature, of: material.message))
        #expect(!key.verifies([], of: material.message))
        #expect(!key.verifies(Array(material.rsaSignature.dropLast()), of: material.message))
        // Another modulus, or another exponent, is another key.
        var modulus = material.rsaModulus
        modulus[modulus.count - 1] ^= 2
        #expect(PublicKey.rsa(modulus: modulus, exponent: Self.exponent)?.verifies(material.rsaSignature, of: material.message) != true)
        #expect(PublicKey.rsa(modulus: material.rsaModulus, exponent: [3])?.verifies(material.rsaSignature, of: material.message) != true)
    }

    @Test func rsaKeysUnder2048BitsAreRefused() throws {
        let material = try Self.material.get()
        #expect(material.weakRSAModulus.count == 128)
        #expect(PublicKey.rsa(modulus: material.weakRSAModulus, exponent: Self.exponent) == nil)
        #expect(PublicKey.rsa(modulus: [0, 0] + material.rsaModulus, exponent: Self.exponent) != nil, "leading zeros do not count")
        #expect(PublicKey.rsa(modulus: material.rsaModulus, exponent: []) == nil)
    }

    @Test func aP256SignatureVerifiesRawAsJWSHasItAndAsDER() throws {
        let material = try Self.material.get()
        try #require(material.ecPoint.count == 65 && material.ecPoint[0] == 0x04)
        let (x, y) = (Array(material.ecPoint[1...32]), Array(material.ecPoint[33...64]))
        let key = try #require(PublicKey.p256(x: x, y: y))
        #expect(key.algorithm == .es256)
        let raw = try SigningKeys.rawP256Signature(der: material.ecSignature)
        #expect(key.verifies(raw, of: material.message))
        #expect(key.verifies(material.ecSignature, of: material.message, encoding: .der))
        // Each form only as what it is.
        #expect(!key.verifies(material.ecSignature, of: material.message))
        #expect(!key.verifies(raw, of: material.message, encoding: .der))
        var message = material.message
        message[message.count - 1] ^= 1
        #expect(!key.verifies(raw, of: message))
        var changed = raw
        changed[40] ^= 1
        #expect(!key.verifies(changed, of: material.message))
        #expect(!key.verifies(Array(raw.dropLast()), of: material.message))
        #expect(!key.verifies([UInt8](repeating: 0, count: 64), of: material.message))
    }

    @Test func aPointOffTheCurveMakesNoKey() throws {
        let material = try Self.material.get()
        let (x, y) = (Array(material.ecPoint[1...32]), Array(material.ecPoint[33...64]))
        var offCurve = y
        offCurve[31] ^= 1
        #expect(PublicKey.p256(x: x, y: offCurve) == nil)
        #expect(PublicKey.p256(x: x, y: Array(y.dropLast())) == nil)
        #expect(PublicKey.p256(x: [UInt8](repeating: 0, count: 32), y: [UInt8](repeating: 0, count: 32)) == nil)
    }
}
