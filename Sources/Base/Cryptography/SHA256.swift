import COpenSSL

/// SHA-256 through OpenSSL's EVP interface: session-token hashes, image checksums, ETags.
public enum SHA256 {
    /// The length of a digest in bytes.
    public static let digestLength = 32

    /// The 32-byte SHA-256 digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// SHA-256 fetched from the default provider once: `EVP_sha256()` makes every digest fetch it
    /// again, which cost as much as hashing a session token.
    private struct Algorithm: @unchecked Sendable {
        // @unchecked: a fetched EVP_MD is immutable and may be shared between threads.
        let md: OpaquePointer
    }

    private static let algorithm: Algorithm = {
        guard let md = EVP_MD_fetch(nil, "SHA256", nil) else { preconditionFailure("OpenSSL has no SHA-256") }
        return Algorithm(md: md)
    }()

    /// The 32-byte SHA-256 digest of the bytes in `input`.
    public static func hash(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: digestLength)
        var length: UInt32 = 0
        let ok = digest.withUnsafeMutableBufferPointer { output in
            EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, algorithm.md, nil)
        }
        // SHA-256 over memory we own cannot fail short of a broken libcrypto; a wrong digest
        // would silently corrupt token lookups, so stop rather than continue.
        precondition(ok == 1 && length == UInt32(digestLength), "EVP_Digest(SHA-256) failed")
        return digest
    }

    /// The 32-byte SHA-256 digest of `bytes`.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        hash(Array(bytes))
    }

    /// The SHA-256 digest of `bytes` as 64 lower-case hexadecimal characters.
    public static func hexDigest(_ bytes: some Sequence<UInt8>) -> String {
        Hex.encode(hash(bytes))
    }
}
