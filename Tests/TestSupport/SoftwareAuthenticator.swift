import Cryptography
import Foundation

/// A passkey authenticator in software for tests: a P-256 key the `openssl` command made, its
/// COSE form, and the authenticator data, attestation objects, client data and signatures of
/// both ceremonies, built as an authenticator and a browser would.
public struct SoftwareAuthenticator: Sendable {
    public let directory: String
    /// The credential public key, COSE (`{1: 2, 3: -7, -1: 1, -2: x, -3: y}`).
    public let cose: [UInt8]
    public let credentialID: [UInt8]

    public init() throws {
        directory = try makeTemporaryDirectory("exo-authenticator")
        try run("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "ec.pem"], in: directory)
        try run("/usr/bin/openssl", ["pkey", "-in", "ec.pem", "-pubout", "-outform", "DER", "-out", "ec.der"], in: directory)
        guard let der = FileManager.default.contents(atPath: directory + "/ec.der") else { throw TestFailure("no public key") }
        let point = Array(der.suffix(65))
        cose = [0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20] + point[1...32] + [0x22, 0x58, 0x20] + point[33...64]
        credentialID = (0..<16).map { _ in UInt8.random(in: 0...255) }
    }

    /// A DER ECDSA signature of `message` (SHA-256) with the key.
    public func sign(_ message: [UInt8]) throws -> [UInt8] {
        let name = "m-\(UInt64.random(in: 0...UInt64.max))"
        try Data(message).write(to: URL(fileURLWithPath: directory + "/" + name))
        defer {
            unlink(directory + "/" + name)
            unlink(directory + "/" + name + ".sig")
        }
        try run("/usr/bin/openssl", ["dgst", "-sha256", "-sign", "ec.pem", "-out", name + ".sig", name], in: directory)
        guard let signature = FileManager.default.contents(atPath: directory + "/" + name + ".sig") else { throw TestFailure("no signature") }
        return [UInt8](signature)
    }

    /// Flags: 0x01 user present, 0x04 user verified, 0x40 attested credential data.
    public func authenticatorData(rpID: String, flags: UInt8, count: UInt32, attested: Bool) -> [UInt8] {
        var data = SHA256.hash(Array(rpID.utf8)) + [flags] + withUnsafeBytes(of: count.bigEndian) { Array($0) }
        if attested { data += [UInt8](repeating: 0, count: 16) + [0, UInt8(credentialID.count)] + credentialID + cose }
        return data
    }

    /// `{"fmt": format, "attStmt": statement, "authData": data}` in CBOR.
    public static func attestationObject(_ format: String, statement: [UInt8] = [0xA0], data: [UInt8]) -> [UInt8] {
        var bytes: [UInt8] = [0xA3, 0x63] + Array("fmt".utf8) + [0x60 + UInt8(format.utf8.count)] + Array(format.utf8)
        bytes += [0x67] + Array("attStmt".utf8) + statement
        bytes += [0x68] + Array("authData".utf8) + [0x59, UInt8(data.count >> 8), UInt8(data.count & 0xFF)] + data
        return bytes
    }

    /// The client data a browser signs over.
    public static func clientData(_ type: String, challenge: String, origin: String) -> [UInt8] {
        Array(#"{"type":"\#(type)","challenge":"\#(challenge)","origin":"\#(origin)","crossOrigin":false}"#.utf8)
    }
}
