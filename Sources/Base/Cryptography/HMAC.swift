import COpenSSL

/// HMAC (RFC 2104) through OpenSSL: SHA-256 signs image URLs; SHA-1 makes one-time passwords
/// (RFC 4226, RFC 6238), as authenticator apps compute them.
public enum HMAC {
    /// The 32-byte HMAC-SHA-256 of `message` under `key`.
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        mac(EVP_sha256(), length: SHA256.digestLength, key: key, message: message)
    }

    /// The 20-byte HMAC-SHA-1 of `message` under `key`.
    public static func sha1(key: [UInt8], message: [UInt8]) -> [UInt8] {
        mac(EVP_sha1(), length: 20, key: key, message: message)
    }

    private static func mac(_ digest: OpaquePointer?, length expected: Int, key: [UInt8], message: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: expected)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                mac.withUnsafeMutableBufferPointer { output in
                    COpenSSL.HMAC(
                        digest, key.baseAddress, Int32(key.count), message.baseAddress?.assumingMemoryBound(to: UInt8.self), message.count,
                        output.baseAddress, &length)
                }
            }
        }
        // Over memory we own this fails only with a broken libcrypto; a wrong MAC would accept or
        // refuse at random, so stop rather than continue.
        precondition(result != nil && length == UInt32(expected), "HMAC failed")
        return mac
    }
}
