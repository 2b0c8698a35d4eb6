/// What the signature tests need to read what the `openssl` command prints and writes.
public enum SigningKeys {
    /// The bytes of hexadecimal text (`openssl rsa -modulus`), an odd digit count padded in front.
    public static func bytes(hex text: String) throws -> [UInt8] {
        var digits = Array(text.utf8)
        if digits.count % 2 == 1 { digits.insert(UInt8(ascii: "0"), at: 0) }
        return try stride(from: 0, to: digits.count, by: 2).map { index in
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                throw TestFailure("not hexadecimal: \(text.prefix(40))")
            }
            return byte
        }
    }

    /// The r ‖ s of 32 bytes each (JWS's form) of a DER ECDSA-Sig-Value (`openssl dgst -sign`
    /// with a P-256 key): a SEQUENCE of two INTEGERs.
    public static func rawP256Signature(der: [UInt8]) throws -> [UInt8] {
        guard der.count > 8, der[0] == 0x30 else { throw TestFailure("not a DER sequence") }
        var index = 2
        var parts: [[UInt8]] = []
        for _ in 0..<2 {
            guard index + 2 <= der.count, der[index] == 0x02, index + 2 + Int(der[index + 1]) <= der.count else {
                throw TestFailure("not a DER ECDSA signature")
            }
            let length = Int(der[index + 1])
            let integer = Array(der[(index + 2)..<(index + 2 + length)].drop { $0 == 0 })
            guard integer.count <= 32 else { throw TestFailure("an integer over 32 bytes") }
            parts.append([UInt8](repeating: 0, count: 32 - integer.count) + integer)
            index += 2 + length
        }
        return parts[0] + parts[1]
    }
}
