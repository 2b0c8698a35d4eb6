/// Why a JSON document was refused, and where.
///
/// `code` is stable and machine-readable; `description` is generic and safe to show to a client:
/// it never contains any of the input.
public struct JSONError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable, extensible error code (a struct with static members rather than an enum, so that
    /// adding a code is not a breaking change).
    public struct Code: Sendable, Hashable, RawRepresentable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A byte that cannot start or continue a value here (includes a byte order mark).
        public static let invalidJSON = Code(rawValue: "invalid_json")
        /// A number that breaks the RFC 8259 grammar (leading zero, `1.`, `-`, `1e`, …).
        public static let invalidNumber = Code(rawValue: "invalid_number")
        /// An unknown escape, a malformed `\u` escape or an unpaired surrogate escape.
        public static let invalidEscape = Code(rawValue: "invalid_escape")
        /// An unescaped control character (U+0000–U+001F) inside a string.
        public static let controlCharacter = Code(rawValue: "control_character")
        /// A string holding bytes that are not well-formed UTF-8.
        public static let invalidUTF8 = Code(rawValue: "invalid_utf8")
        /// The input ended inside a value (also: empty input).
        public static let unexpectedEnd = Code(rawValue: "unexpected_end")
        /// Something other than whitespace follows the top-level value.
        public static let trailingData = Code(rawValue: "trailing_data")
        /// Arrays and objects nested deeper than `JSONLimits.maxDepth`.
        public static let tooDeep = Code(rawValue: "too_deep")
        /// The input is longer than `JSONLimits.maxBytes`.
        public static let tooLarge = Code(rawValue: "too_large")
        /// An object names the same key twice.
        public static let duplicateKey = Code(rawValue: "duplicate_key")
        /// A number literal longer than `JSONLimits.maxNumberLength` characters.
        public static let numberTooLong = Code(rawValue: "number_too_long")
        /// A string (or key) longer than `JSONLimits.maxStringBytes` UTF-8 bytes once unescaped.
        public static let stringTooLong = Code(rawValue: "string_too_long")
        /// An object with more keys than `JSONLimits.maxKeysPerObject`.
        public static let tooManyKeys = Code(rawValue: "too_many_keys")
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
