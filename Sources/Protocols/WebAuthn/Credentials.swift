import Cryptography
import JSON

/// Why a passkey ceremony was refused: a short reason for logs and the problem's detail (never
/// key material or a challenge).
public struct WebAuthnFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// A credential public key in COSE form (RFC 9052/9053): ES256 (EC2, P-256) or RS256 (RSA).
public enum COSEKey {
    public static let es256 = -7
    public static let rs256 = -257

    /// The key `cose` describes, or why it cannot be used.
    public static func publicKey(_ cose: CBOR) throws(WebAuthnFailure) -> PublicKey {
        switch (cose[int: 3]?.intValue, cose[int: 1]?.intValue) {
        case (es256?, 2?):
            guard cose[int: -1]?.intValue == 1, let x = cose[int: -2]?.bytesValue, let y = cose[int: -3]?.bytesValue,
                let key = PublicKey.p256(x: x, y: y)
            else { throw WebAuthnFailure("an ES256 key that is not a P-256 point") }
            return key
        case (rs256?, 3?):
            guard let n = cose[int: -1]?.bytesValue, let e = cose[int: -2]?.bytesValue, let key = PublicKey.rsa(modulus: n, exponent: e) else {
                throw WebAuthnFailure("an RS256 key that is no RSA key of 2,048 bits or more")
            }
            return key
        default:
            throw WebAuthnFailure("a key of an algorithm other than ES256 or RS256")
        }
    }

    /// `publicKey` of stored COSE bytes.
    public static func publicKey(bytes: [UInt8]) throws(WebAuthnFailure) -> PublicKey {
        let item: CBOR
        do { item = try CBOR.decode(bytes) } catch { throw WebAuthnFailure("the stored key is not CBOR: \(error)") }
        return try publicKey(item)
    }
}

/// The authenticator data (WebAuthn §6.1): the RP id's hash, the flags, the signature counter,
/// and at registration the attested credential (its id and COSE public key).
public struct AuthenticatorData: Sendable {
    public let rpIDHash: [UInt8]
    public let flags: UInt8
    public let signCount: UInt32
    public let credentialID: [UInt8]?
    /// The credential public key's CBOR bytes, as they came (stored as is).
    public let credentialPublicKey: [UInt8]?
    public let aaguid: [UInt8]?

    public var userPresent: Bool { flags & 0x01 != 0 }
    public var userVerified: Bool { flags & 0x04 != 0 }
    public var backupEligible: Bool { flags & 0x08 != 0 }
    public var backedUp: Bool { flags & 0x10 != 0 }
    public var hasAttestedCredential: Bool { flags & 0x40 != 0 }
    public var hasExtensions: Bool { flags & 0x80 != 0 }

    public init(_ bytes: [UInt8]) throws(WebAuthnFailure) {
        guard bytes.count >= 37 else { throw WebAuthnFailure("authenticator data shorter than 37 bytes") }
        rpIDHash = Array(bytes[0..<32])
        flags = bytes[32]
        signCount = bytes[33..<37].reduce(0) { $0 << 8 | UInt32($1) }
        var rest = bytes[37...]
        if flags & 0x40 != 0 {
            guard rest.count >= 18 else { throw WebAuthnFailure("attested credential data cut short") }
            aaguid = Array(rest.prefix(16))
            let length = Int(rest[rest.startIndex + 16]) << 8 | Int(rest[rest.startIndex + 17])
            rest = rest.dropFirst(18)
            guard length >= 16, length <= 1_023, rest.count >= length else { throw WebAuthnFailure("a credential id of a bad length") }
            credentialID = Array(rest.prefix(length))
            rest = rest.dropFirst(length)
            do {
                let (_, keyLength) = try CBOR.decodePrefix(rest)
                credentialPublicKey = Array(rest.prefix(keyLength))
                rest = rest.dropFirst(keyLength)
            } catch {
                throw WebAuthnFailure("the credential public key is not CBOR: \(error)")
            }
        } else {
            (aaguid, credentialID, credentialPublicKey) = (nil, nil, nil)
        }
        if flags & 0x80 != 0 {
            do {
                let (_, length) = try CBOR.decodePrefix(rest)
                rest = rest.dropFirst(length)
            } catch {
                throw WebAuthnFailure("the extensions are not CBOR: \(error)")
            }
        }
        guard rest.isEmpty else { throw WebAuthnFailure("\(rest.count) bytes after the authenticator data") }
    }
}

/// The client data (WebAuthn §5.8.1) the browser or the platform signed over: its JSON, read.
public struct ClientData: Sendable {
    public enum Ceremony: String, Sendable {
        case create = "webauthn.create"
        case get = "webauthn.get"
    }

    public let ceremony: Ceremony
    public let challenge: [UInt8]
    public let origin: String
    public let crossOrigin: Bool
    /// SHA-256 of the JSON's bytes, as signed.
    public let hash: [UInt8]

    public init(json bytes: [UInt8]) throws(WebAuthnFailure) {
        guard bytes.count <= 8_192, let object = try? JSONParser.parse(bytes).objectValue else {
            throw WebAuthnFailure("the client data is not a JSON object")
        }
        guard let type = object["type"]?.stringValue, let ceremony = Ceremony(rawValue: type) else {
            throw WebAuthnFailure("the client data's type is not a WebAuthn ceremony")
        }
        guard let challengeText = object["challenge"]?.stringValue, let challenge = Base64URL.decode(challengeText) else {
            throw WebAuthnFailure("the client data has no challenge")
        }
        guard let origin = object["origin"]?.stringValue else { throw WebAuthnFailure("the client data has no origin") }
        self.ceremony = ceremony
        self.challenge = challenge
        self.origin = origin
        crossOrigin = object["crossOrigin"]?.boolValue ?? false
        hash = SHA256.hash(bytes)
    }
}

/// What the relying party (this server) accepts: its RP id and the origins of its pages and apps.
public struct RelyingParty: Sendable {
    public var id: String
    public var name: String
    public var origins: Set<String>

    public init(id: String, name: String, origins: Set<String>) {
        self.id = id
        self.name = name
        self.origins = origins
    }

    /// The client data of `ceremony` from one of the origins, not from a cross-origin frame.
    public func check(_ clientData: ClientData, _ ceremony: ClientData.Ceremony) throws(WebAuthnFailure) {
        guard clientData.ceremony == ceremony else { throw WebAuthnFailure("the client data is of another ceremony") }
        guard origins.contains(clientData.origin) else { throw WebAuthnFailure("the origin \(clientData.origin.prefix(100)) is not this server's") }
        guard !clientData.crossOrigin else { throw WebAuthnFailure("a cross-origin frame") }
    }

    /// Flags and RP id of authenticator data: for this RP id, the user present and verified.
    public func check(_ data: AuthenticatorData) throws(WebAuthnFailure) {
        guard ConstantTime.equals(data.rpIDHash, SHA256.hash(Array(id.utf8))) else { throw WebAuthnFailure("made for another RP id") }
        guard data.userPresent else { throw WebAuthnFailure("the user was not present") }
        guard data.userVerified else { throw WebAuthnFailure("the user was not verified") }
    }
}

/// A credential being registered, checked: what is stored of it.
public struct NewCredential: Sendable {
    public let id: [UInt8]
    /// COSE bytes.
    public let publicKey: [UInt8]
    public let signCount: UInt32
    public let aaguid: [UInt8]
    public let backupEligible: Bool
    public let backedUp: Bool
    /// The attestation statement's format (`none`, `packed`).
    public let format: String

    /// Registration (WebAuthn §7.1, steps 11 on, once the client data's challenge was found): the
    /// attestation object's authenticator data for `party`, a credential of a supported key, and
    /// the attestation: `none`, or `packed` (self, or by the certificate's key; the chain is not
    /// judged, as `attestation: "none"` is asked for).
    public init(attestationObject: [UInt8], clientData: ClientData, for party: RelyingParty) throws(WebAuthnFailure) {
        let object: CBOR
        do { object = try CBOR.decode(attestationObject) } catch { throw WebAuthnFailure("the attestation object is not CBOR: \(error)") }
        guard let format = object[text: "fmt"]?.textValue, let statement = object[text: "attStmt"],
            let authData = object[text: "authData"]?.bytesValue
        else { throw WebAuthnFailure("the attestation object lacks fmt, attStmt or authData") }
        let data = try AuthenticatorData(authData)
        try party.check(data)
        guard data.hasAttestedCredential, let id = data.credentialID, let keyBytes = data.credentialPublicKey, let aaguid = data.aaguid else {
            throw WebAuthnFailure("no attested credential")
        }
        let keyItem: CBOR
        do { keyItem = try CBOR.decode(keyBytes) } catch { throw WebAuthnFailure("the credential public key is not CBOR") }
        let key = try COSEKey.publicKey(keyItem)
        switch format {
        case "none":
            guard case .map(let entries) = statement, entries.isEmpty else { throw WebAuthnFailure("a none attestation with a statement") }
        case "packed":
            guard let algorithm = statement[text: "alg"]?.intValue, let signature = statement[text: "sig"]?.bytesValue else {
                throw WebAuthnFailure("a packed attestation without alg or sig")
            }
            let signed = authData + clientData.hash
            let signer: PublicKey
            if let chain = statement[text: "x5c"]?.arrayValue {
                guard let leaf = chain.first?.bytesValue, let certified = PublicKey.certified(der: leaf) else {
                    throw WebAuthnFailure("a packed attestation certificate that is not usable")
                }
                signer = certified
            } else {
                guard algorithm == keyItem[int: 3]?.intValue else { throw WebAuthnFailure("a self attestation of another algorithm") }
                signer = key
            }
            guard signer.verifies(signature, of: signed, encoding: .der) else { throw WebAuthnFailure("the attestation signature does not verify") }
        default:
            throw WebAuthnFailure("an attestation format other than none or packed")
        }
        self.id = id
        publicKey = keyBytes
        signCount = data.signCount
        self.aaguid = aaguid
        backupEligible = data.backupEligible
        backedUp = data.backedUp
        self.format = format
    }
}

/// A sign-in's assertion (WebAuthn §7.2, once the credential and the challenge were found).
public struct Assertion: Sendable {
    public let data: AuthenticatorData

    /// Checks the authenticator data for `party` and the signature over it and the client data's
    /// hash with the credential's stored key; then the counter: when either the stored or the new
    /// one is not zero, the new one must be greater (a cloned authenticator otherwise).
    public init(
        authenticatorData: [UInt8], signature: [UInt8], clientData: ClientData, storedKey: [UInt8], storedCount: UInt32,
        for party: RelyingParty
    ) throws(WebAuthnFailure) {
        let data = try AuthenticatorData(authenticatorData)
        try party.check(data)
        let key = try COSEKey.publicKey(bytes: storedKey)
        guard key.verifies(signature, of: authenticatorData + clientData.hash, encoding: .der) else {
            throw WebAuthnFailure("the signature does not verify")
        }
        if data.signCount != 0 || storedCount != 0, data.signCount <= storedCount {
            throw WebAuthnFailure("the signature counter went back (\(data.signCount) after \(storedCount))")
        }
        self.data = data
    }
}
