import COpenSSL

/// MD5 through OpenSSL, for integrity against accidents only, never against an adversary: the
/// ETag an S3 store gives an object written in one request.
public enum MD5 {
    /// The 16-byte MD5 digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { input in
            digest.withUnsafeMutableBufferPointer { EVP_Digest(input.baseAddress, input.count, $0.baseAddress, &length, EVP_md5(), nil) }
        }
        precondition(ok == 1 && length == 16, "EVP_Digest(MD5) failed")
        return digest
    }
}
