import COpenSSL

/// PBKDF2 with HMAC-SHA-256 (RFC 8018) through OpenSSL's `PKCS5_PBKDF2_HMAC`.
public enum PBKDF2 {
    /// The `keyLength`-byte PBKDF2-HMAC-SHA256 key of `password` and `salt` after `iterations`
    /// rounds. Throws `invalidParameters` for non-positive or oversized inputs and
    /// `hashingFailed` if OpenSSL fails.
    public static func hmacSHA256(
        password: [UInt8], salt: [UInt8], iterations: Int, keyLength: Int
    ) throws -> [UInt8] {
        let limit = Int(Int32.max)
        guard iterations > 0, iterations <= limit, keyLength > 0, keyLength <= limit,
            password.count <= limit, salt.count <= limit
        else {
            throw SecurityError(.invalidParameters, detail: "PBKDF2 input out of range")
        }
        var key = [UInt8](repeating: 0, count: keyLength)
        let ok = password.withUnsafeBufferPointer { password in
            salt.withUnsafeBufferPointer { salt in
                key.withUnsafeMutableBufferPointer { key in
                    password.withMemoryRebound(to: CChar.self) { password in
                        PKCS5_PBKDF2_HMAC(
                            password.baseAddress, Int32(password.count),
                            salt.baseAddress, Int32(salt.count),
                            Int32(iterations), EVP_sha256(),
                            Int32(key.count), key.baseAddress)
                    }
                }
            }
        }
        guard ok == 1 else {
            throw SecurityError.openSSL(.hashingFailed, operation: "PKCS5_PBKDF2_HMAC")
        }
        return key
    }
}
