import Cryptography
import Foundation
import TestSupport
import Testing
import WebAuthn

/// CBOR against RFC 8949's examples, and both ceremonies with a software authenticator: a P-256
/// key the `openssl` command made, its COSE form, authenticator data and signatures built here.
@Suite(.testThreads) struct WebAuthnTests {
    static func hex(_ text: String) throws -> [UInt8] { try SigningKeys.bytes(hex: text) }

    @Test func cborDecodesRFC8949Examples() throws {
        let examples: [(String, CBOR)] = [
            ("00", .unsigned(0)), ("17", .unsigned(23)), ("1818", .unsigned(24)), ("1a000f4240", .unsigned(1_000_000)),
            ("1bffffffffffffffff", .unsigned(UInt64.max)), ("20", .negative(0)), ("3903e7", .negative(999)),
            ("4401020304", .bytes([1, 2, 3, 4])), ("6449455446", .text("IETF")), ("62c3bc", .text("ü")),
            ("8301820203820405", .array([.unsigned(1), .array([.unsigned(2), .unsigned(3)]), .array([.unsigned(4), .unsigned(5)])])),
            ("a201020304", .map([(.unsigned(1), .unsigned(2)), (.unsigned(3), .unsigned(4))])),
            ("c11a514b67b0", .tagged(1, .unsigned(1_363_896_240))), ("f4", .bool(false)), ("f5", .bool(true)), ("f6", .null),
            ("f7", .undefined), ("f93e00", .float(1.5)), ("f97c00", .float(.infinity)), ("f90001", .float(5.960464477539063e-8)),
            ("fa47c35000", .float(100_000)), ("fb3ff199999999999a", .float(1.1)),
        ]
        for (text, expected) in examples {
            #expect(try CBOR.decode(try Self.hex(text)) == expected, "\(text)")
        }
        #expect(try CBOR.decode(try Self.hex("a201020304"))[int: 3] == .unsigned(4))
        #expect(try CBOR.decode(try Self.hex("3903e7")).intValue == -1000)
    }

    @Test func cborRefusesWhatIsNotCanonicalCBOR() throws {
        let deep = [UInt8](repeating: 0x81, count: 40) + [0x00]
        for (what, bytes) in [
            ("an indefinite length", try Self.hex("5f42010243030405ff")), ("cut short", try Self.hex("1901")),
            ("a length past the end", try Self.hex("5a00010000")), ("a key twice", try Self.hex("a201020103")),
            ("bytes after the item", try Self.hex("0000")), ("text that is not UTF-8", try Self.hex("62c328")), ("nested too deeply", deep),
            ("a reserved value", try Self.hex("1c")), ("nothing", []),
        ] {
            #expect(throws: CBOR.Malformed.self, "\(what)") { try CBOR.decode(bytes) }
        }
        let (item, length) = try CBOR.decodePrefix(try Self.hex("a1010200ff")[...])
        #expect(item == .map([(.unsigned(1), .unsigned(2))]) && length == 3)
    }

    // MARK: - A software authenticator (TestSupport)

    typealias Authenticator = SoftwareAuthenticator

    static let party = RelyingParty(id: "example.com", name: "Example", origins: ["https://example.com"])

    static func clientData(_ type: String, origin: String = "https://example.com") throws -> ClientData {
        try ClientData(json: Array(#"{"type":"\#(type)","challenge":"AAECAw","origin":"\#(origin)","crossOrigin":false}"#.utf8))
    }

    static func attestation(_ format: String, statement: [UInt8], data: [UInt8]) -> [UInt8] {
        SoftwareAuthenticator.attestationObject(format, statement: statement, data: data)
    }

    @Test func registrationChecksFlagsRPIDAndAttestation() throws {
        let key = try Authenticator()
        let clientData = try Self.clientData("webauthn.create")
        try Self.party.check(clientData, .create)
        let good = key.authenticatorData(rpID: "example.com", flags: 0x45, count: 0, attested: true)
        let credential = try NewCredential(
            attestationObject: Self.attestation("none", statement: [0xA0], data: good), clientData: clientData, for: Self.party)
        #expect(credential.id == key.credentialID && credential.publicKey == key.cose && credential.format == "none")
        #expect(throws: Never.self) { _ = try COSEKey.publicKey(bytes: credential.publicKey) }

        // Packed self attestation: the credential's own key signs authData ‖ hash(clientData).
        let signature = try key.sign(good + clientData.hash)
        let statement = [0xA2, 0x63] + Array("alg".utf8) + [0x26, 0x63] + Array("sig".utf8) + [0x58, UInt8(signature.count)] + signature
        #expect(
            try NewCredential(
                attestationObject: Self.attestation("packed", statement: statement, data: good), clientData: clientData, for: Self.party
            ).format == "packed")
        var forged = signature
        forged[forged.count - 1] ^= 1
        let forgedStatement = [0xA2, 0x63] + Array("alg".utf8) + [0x26, 0x63] + Array("sig".utf8) + [0x58, UInt8(forged.count)] + forged

        let refused: [(String, [UInt8])] = [
            (
                "no user verification",
                Self.attestation("none", statement: [0xA0], data: key.authenticatorData(rpID: "example.com", flags: 0x41, count: 0, attested: true))
            ),
            (
                "no user presence",
                Self.attestation("none", statement: [0xA0], data: key.authenticatorData(rpID: "example.com", flags: 0x44, count: 0, attested: true))
            ),
            (
                "another RP id",
                Self.attestation("none", statement: [0xA0], data: key.authenticatorData(rpID: "evil.com", flags: 0x45, count: 0, attested: true))
            ),
            (
                "no credential",
                Self.attestation("none", statement: [0xA0], data: key.authenticatorData(rpID: "example.com", flags: 0x05, count: 0, attested: false))
            ),
            ("a forged packed signature", Self.attestation("packed", statement: forgedStatement, data: good)),
            ("an unknown format", Self.attestation("tpm", statement: [0xA0], data: good)),
            ("none with a statement", Self.attestation("none", statement: [0xA1, 0x01, 0x02], data: good)),
        ]
        for (what, object) in refused {
            #expect(throws: WebAuthnFailure.self, "\(what)") { try NewCredential(attestationObject: object, clientData: clientData, for: Self.party) }
        }
        #expect(throws: WebAuthnFailure.self) { try Self.party.check(try Self.clientData("webauthn.create", origin: "https://evil.com"), .create) }
        #expect(throws: WebAuthnFailure.self) { try Self.party.check(try Self.clientData("webauthn.get"), .create) }
    }

    @Test func assertionChecksTheSignatureAndTheCounter() throws {
        let key = try Authenticator()
        let clientData = try Self.clientData("webauthn.get")
        func assertion(count: UInt32, stored: UInt32, flags: UInt8 = 0x05, tamper: Bool = false) throws -> Assertion {
            let data = key.authenticatorData(rpID: "example.com", flags: flags, count: count, attested: false)
            var signature = try key.sign(data + clientData.hash)
            if tamper { signature[signature.count - 1] ^= 1 }
            return try Assertion(
                authenticatorData: data, signature: signature, clientData: clientData, storedKey: key.cose, storedCount: stored, for: Self.party)
        }
        #expect(try assertion(count: 5, stored: 4).data.signCount == 5)
        #expect(try assertion(count: 0, stored: 0).data.signCount == 0, "an authenticator that keeps no counter")
        #expect(throws: WebAuthnFailure.self, "the counter went back") { try assertion(count: 4, stored: 5) }
        #expect(throws: WebAuthnFailure.self, "the counter stood still") { try assertion(count: 5, stored: 5) }
        #expect(throws: WebAuthnFailure.self, "the counter stopped") { try assertion(count: 0, stored: 5) }
        #expect(throws: WebAuthnFailure.self, "a bad signature") { try assertion(count: 6, stored: 5, tamper: true) }
        #expect(throws: WebAuthnFailure.self, "no user verification") { try assertion(count: 6, stored: 5, flags: 0x01) }
    }
}
