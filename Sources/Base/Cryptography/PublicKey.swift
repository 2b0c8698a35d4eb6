import COpenSSL

/// A public key that checks signatures over SHA-256, built from the parts a JWK (`n`, `e`; `x`,
/// `y`) or a COSE key carries: RSA with PKCS #1 v1.5 padding (JWS `RS256`, COSE -257) or ECDSA on
/// P-256 (JWS `ES256`, COSE -7). What providers' ID tokens and passkeys are signed with.
public final class PublicKey: @unchecked Sendable {
    // @unchecked: the EVP_PKEY is never changed after it is made, and OpenSSL lets threads verify
    // with one key at once.

    public enum Algorithm: String, Sendable {
        case rs256 = "RS256"
        case es256 = "ES256"
    }

    /// How an ECDSA signature is encoded: `raw`, r ‖ s of 32 bytes each (JWS), or `der`, an
    /// ASN.1 ECDSA-Sig-Value (WebAuthn). An RSA signature is the same either way.
    public enum SignatureEncoding: Sendable {
        case raw, der
    }

    public let algorithm: Algorithm
    private let key: OpaquePointer

    private init(algorithm: Algorithm, key: OpaquePointer) {
        self.algorithm = algorithm
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// An RSA key from its big-endian modulus and exponent; nil when they make no key, or one of
    /// under 2,048 bits.
    public static func rsa(modulus: [UInt8], exponent: [UInt8]) -> PublicKey? {
        defer { ERR_clear_error() }  // a refusal leaves nothing on this thread's error queue
        let modulus = Array(modulus.drop { $0 == 0 })
        guard modulus.count >= 256, modulus.count <= 1_024, !exponent.isEmpty, exponent.count <= 8 else { return nil }
        guard let key = copenssl_public_key_rsa(modulus, modulus.count, exponent, exponent.count) else { return nil }
        return PublicKey(algorithm: .rs256, key: key)
    }

    /// A P-256 key from its 32-byte coordinates; nil when the point is not on the curve.
    public static func p256(x: [UInt8], y: [UInt8]) -> PublicKey? {
        defer { ERR_clear_error() }
        guard x.count == 32, y.count == 32 else { return nil }
        let point = [0x04] + x + y
        guard let key = copenssl_public_key_p256(point, point.count) else { return nil }
        return PublicKey(algorithm: .es256, key: key)
    }

    /// The key of a DER X.509 certificate (a passkey's attestation certificate; the certificate
    /// itself is not judged): P-256 or RSA of 2,048 bits or more; nil for anything else.
    public static func certified(der: [UInt8]) -> PublicKey? {
        defer { ERR_clear_error() }
        var isEC: Int32 = 0
        guard der.count <= 16_384, let key = copenssl_certificate_public_key(der, der.count, &isEC) else { return nil }
        let fits = isEC == 1 ? copenssl_key_is_p256(key) == 1 : EVP_PKEY_get_bits(key) >= 2_048 && EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA
        guard fits else {
            EVP_PKEY_free(key)
            return nil
        }
        return PublicKey(algorithm: isEC == 1 ? .es256 : .rs256, key: key)
    }

    /// Whether `signature` is this key's over `message` (SHA-256). Never throws: anything
    /// malformed is a signature that does not verify.
    public func verifies(_ signature: [UInt8], of message: [UInt8], encoding: SignatureEncoding = .raw) -> Bool {
        defer { ERR_clear_error() }
        var signature = signature
        if algorithm == .es256, encoding == .raw {
            guard signature.count == 64 else { return false }
            var der = [UInt8](repeating: 0, count: 80)
            let length = copenssl_ecdsa_raw_to_der(signature, 32, &der, der.count)
            guard length > 0 else { return false }
            signature = Array(der.prefix(Int(length)))
        }
        guard !signature.isEmpty, let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit_ex(context, nil, "SHA256", nil, nil, key, nil) == 1 else { return false }
        return message.withUnsafeBufferPointer { message in
            signature.withUnsafeBufferPointer { signature in
                EVP_DigestVerify(context, signature.baseAddress, signature.count, message.baseAddress, message.count) == 1
            }
        }
    }
}
