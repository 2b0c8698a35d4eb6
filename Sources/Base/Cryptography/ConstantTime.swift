import COpenSSL

/// Comparisons whose running time does not depend on the bytes being compared.
public enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes, compared with `CRYPTO_memcmp`.
    ///
    /// Arrays of different lengths are unequal; that answer depends only on the lengths, which
    /// are public here (digests and derived keys have fixed sizes), never on the contents.
    public static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in
                CRYPTO_memcmp(a.baseAddress, b.baseAddress, a.count) == 0
            }
        }
    }
}
