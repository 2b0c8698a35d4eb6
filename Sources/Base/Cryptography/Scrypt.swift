import COpenSSL

/// The scrypt key derivation function (RFC 7914) through OpenSSL's `EVP_PBE_scrypt`.
///
/// This is the raw function with any valid cost; password storage goes through
/// `PasswordHasher`, which bounds the parameters and formats PHC strings.
public enum Scrypt {
    /// The memory that scrypt needs for these parameters, in bytes: `128·r·(N+2)` for V plus
    /// `128·r·p` for B, exactly the bound OpenSSL compares `maxmem` against.
    ///
    /// Returns `nil` if the figure does not fit in 64 bits.
    public static func requiredMemory(n: UInt64, r: UInt64, p: UInt64) -> UInt64? {
        let (blockSize, o1) = r.multipliedReportingOverflow(by: 128)
        let (vBlocks, o2) = n.addingReportingOverflow(2)
        let (v, o3) = blockSize.multipliedReportingOverflow(by: vBlocks)
        let (b, o4) = blockSize.multipliedReportingOverflow(by: p)
        let (total, o5) = v.addingReportingOverflow(b)
        guard !(o1 || o2 || o3 || o4 || o5) else { return nil }
        return total
    }

    /// The `keyLength`-byte scrypt key of `password` and `salt` with cost `n` (a power of two
    /// greater than 1), block size `r` and parallelism `p`.
    ///
    /// OpenSSL's default memory cap (32 MiB) is too small for OWASP's parameters, so the cap
    /// passed is exactly `requiredMemory`. Throws `invalidParameters` for parameters OpenSSL
    /// rejects and `hashingFailed` if the derivation fails (usually out of memory).
    public static func deriveKey(
        password: [UInt8], salt: [UInt8], n: UInt64, r: UInt64, p: UInt64, keyLength: Int
    ) throws -> [UInt8] {
        guard let memory = requiredMemory(n: n, r: r, p: p) else {
            throw SecurityError(.invalidParameters, detail: "scrypt memory overflows 64 bits")
        }
        return try deriveKey(
            password: password, salt: salt, n: n, r: r, p: p,
            keyLength: keyLength, maxMemory: memory)
    }

    /// `deriveKey` with an explicit memory cap; internal so tests can prove the cap is exact.
    static func deriveKey(
        password: [UInt8], salt: [UInt8], n: UInt64, r: UInt64, p: UInt64, keyLength: Int,
        maxMemory: UInt64
    ) throws -> [UInt8] {
        guard n > 1, n & (n - 1) == 0, r > 0, p > 0, keyLength > 0 else {
            throw SecurityError(.invalidParameters, detail: "scrypt N, r, p or key length invalid")
        }
        // With key == NULL, OpenSSL only validates the parameters: tells bad input apart from a
        // failed derivation.
        guard EVP_PBE_scrypt(nil, 0, nil, 0, n, r, p, maxMemory, nil, 0) == 1 else {
            throw SecurityError.openSSL(.invalidParameters, operation: "EVP_PBE_scrypt parameters")
        }
        var key = [UInt8](repeating: 0, count: keyLength)
        let ok = password.withUnsafeBufferPointer { password in
            salt.withUnsafeBufferPointer { salt in
                key.withUnsafeMutableBufferPointer { key in
                    password.withMemoryRebound(to: CChar.self) { password in
                        EVP_PBE_scrypt(
                            password.baseAddress, password.count,
                            salt.baseAddress, salt.count,
                            n, r, p, maxMemory, key.baseAddress, key.count)
                    }
                }
            }
        }
        guard ok == 1 else {
            throw SecurityError.openSSL(.hashingFailed, operation: "EVP_PBE_scrypt")
        }
        return key
    }
}
