/// Why a JSON document was refused, and where.
///
/// `code` is stable and machine-readable; `description` is generic and safe to show to a client:
/// it never contains any of the input.
public struct JSONError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable, machine-readable code.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        public var description: String { rawValue }

        /// A byte that cannot start or continue a value here (includes a byte order mark).
        case invalidJSON = "invalid_json"
        /// A number that breaks the RFC 8259 grammar (leading zero, `1.`, `-`, `1e`, …).
        case invalidNumber = "invalid_number"
        /// An unknown escape, a malformed `\u` escape or an unpaired surrogate escape.
        case invalidEscape = "invalid_escape"
        /// An unescaped control character (U+0000–U+001F) inside a string.
        case controlCharacter = "control_character"
        /// A string holding bytes that are not well-formed UTF-8.
        case invalidUTF8 = "invalid_utf8"
        /// The input ended inside a value (also: empty input).
        case unexpectedEnd = "unexpected_end"
        /// Something other than whitespace follows the top-level value.
        case trailingData = "trailing_data"
        /// Arrays and objects nested deeper than `JSONLimits.maxDepth`.
        case tooDeep = "too_deep"
        /// The input is longer than `JSONLimits.maxBytes`.
        case tooLarge = "too_large"
        /// An object names the same key twice.
        case duplicateKey = "duplicate_key"
        /// A number literal longer than `JSONLimits.maxNumberLength` characters.
        case numberTooLong = "number_too_long"
        /// A string (or key) longer than `JSONLimits.maxStringBytes` UTF-8 bytes once unescaped.
        case stringTooLong = "string_too_long"
        /// An object with more keys than `JSONLimits.maxKeysPerObject`.
        case tooManyKeys = "too_many_keys"
    }

    /// What went wrong, for machines.
    public let code: Code
    /// The offset in the input of the byte at which the problem was found.
    public let byteOffset: Int
    /// What went wrong, for people; a fixed text that never quotes the input.
    public let reason: String

    public init(code: Code, byteOffset: Int, reason: String) {
        self.code = code
        self.byteOffset = byteOffset
        self.reason = reason
    }

    public var description: String { "\(reason) at byte \(byteOffset)" }
    public var debugDescription: String { "JSONError(\(code.rawValue)): \(reason) at byte \(byteOffset)" }
}
