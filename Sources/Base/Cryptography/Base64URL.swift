/// Base64url (RFC 4648 §5) without padding, strict when decoding: session tokens and other
/// values that travel in headers and URLs.
public enum Base64URL {
    /// The unpadded base64url text of `bytes`.
    public static func encode(_ bytes: [UInt8]) -> String {
        Base64Alphabet.url.encode(bytes)
    }

    /// The bytes of `text`, or `nil` unless `text` is exactly what `encode` would produce for
    /// them (no padding, no other characters, zero trailing bits).
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        Base64Alphabet.url.decode(text)
    }
}
