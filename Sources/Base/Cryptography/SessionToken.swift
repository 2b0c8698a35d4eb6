/// An opaque bearer token: 256 bits from the CSPRNG, given to the client as 43 base64url
/// characters; the database keeps only `hash`, the SHA-256 of that text.
///
/// `description` is redacted so a token cannot reach a log line through interpolation.
public struct SessionToken: Sendable, Hashable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// The number of random bytes in a token.
    public static let byteCount = 32
    /// The number of characters in a token's text.
    public static let textLength = 43  // Base64Alphabet.encodedLength(of: 32)

    /// The token as the client sends it in `Authorization: Bearer <text>`.
    public let text: String

    /// A new token from the CSPRNG. Throws `SecurityError` (`randomFailed`) if the CSPRNG fails.
    public static func generate() throws -> SessionToken {
        SessionToken(validated: Base64URL.encode(try SecureRandom.bytes(count: byteCount)))
    }

    /// The token in `text`, or `nil` if `text` cannot be a token (see `isWellFormed`).
    public init?(_ text: some StringProtocol) {
        guard Self.isWellFormed(text) else { return nil }
        self.init(validated: String(text))
    }

    private init(validated text: String) {
        self.text = text
    }

    /// The digest that the database stores and looks tokens up by.
    public var hash: [UInt8] { Self.hash(of: text) }

    /// The SHA-256 of the UTF-8 text of `tokenText`.
    public static func hash(of tokenText: some StringProtocol) -> [UInt8] {
        SHA256.hash(tokenText.utf8)
    }

    /// The same for a `String`, hashing its contiguous UTF-8 in place (this runs on every
    /// authenticated request; the generic version walks the string through witness tables).
    public static func hash(of tokenText: String) -> [UInt8] {
        var text = tokenText
        return text.withUTF8 { SHA256.hash(UnsafeRawBufferPointer($0)) }
    }

    /// `isWellFormed` for a `String`, over its contiguous UTF-8.
    public static func isWellFormed(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isWellFormed(bytes: $0) }
    }

    /// A cheap syntactic check to reject malformed bearer tokens before any database work:
    /// exactly 43 characters of the base64url alphabet that decode canonically to 32 bytes.
    public static func isWellFormed(_ text: some StringProtocol) -> Bool {
        // Checked on every authenticated request, so without decoding: 43 characters of the
        // base64url alphabet, the last of which carries 2 unused bits that must be zero.
        Array(text.utf8).withUnsafeBufferPointer { isWellFormed(bytes: $0) }
    }

    private static func isWellFormed(bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard bytes.count == textLength else { return false }
        var last: UInt8 = 0
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): last = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): last = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): last = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): last = 62
            case UInt8(ascii: "_"): last = 63
            default: return false
            }
        }
        return last & 0b11 == 0
    }

    public var description: String { "SessionToken(<redacted>)" }
    public var debugDescription: String { description }
}
