import COpenSSL

/// HMAC-SHA-256 (RFC 2104) through OpenSSL: the signatures of signed image URLs.
public enum HMAC {
    /// The 32-byte HMAC-SHA-256 of `message` under `key`.
    public static func sha256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var mac = [UInt8](repeating: 0, count: SHA256.digestLength)
        var length: UInt32 = 0
        let result = key.withUnsafeBytes { key in
            message.withUnsafeBytes { message in
                mac.withUnsafeMutableBufferPointer { output in
                    COpenSSL.HMAC(
                        EVP_sha256(), key.baseAddress, Int32(key.count), message.baseAddress?.assumingMemoryBound(to: UInt8.self),
                        message.count, output.baseAddress, &length)
                }
            }
        }
        // Over memory we own this fails only with a broken libcrypto; a wrong MAC would accept or
        // refuse URLs at random, so stop rather than continue.
        precondition(result != nil && length == UInt32(SHA256.digestLength), "HMAC(SHA-256) failed")
        return mac
    }
}
