/// Standard base64 (RFC 4648 §4) without `=` padding, strict when decoding: the "B64" encoding
/// of salts and hashes in PHC strings.
public enum Base64 {
    /// The unpadded standard base64 text of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        Base64Alphabet.standard.encode(bytes)
    }

    /// The bytes of `text`, or `nil` unless `text` is exactly what `encode` would produce for
    /// them (no padding, no other characters, zero trailing bits).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Base64Alphabet.standard.decode(text)
    }
}
