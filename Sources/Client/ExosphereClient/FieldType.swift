/// The type of a custom field, one for the whole deployment (`GET /users/schema`).
///
/// A struct rather than an enum, so that a type a newer server adds is still read.
public struct FieldType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The type as the API writes it: `double`.
    public let rawValue: String

    /// The type `rawValue`, known to this version or not.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// A string of at most 4096 UTF-8 bytes: `User.string(forKey:)`.
    public static let string = FieldType(rawValue: "string")
    /// A 64-bit integer: `User.integer(forKey:)`.
    public static let integer = FieldType(rawValue: "integer")
    /// A double; integer literals are accepted too: `User.double(forKey:)`.
    public static let double = FieldType(rawValue: "double")
    /// `true` or `false`: `User.bool(forKey:)`.
    public static let boolean = FieldType(rawValue: "boolean")
    /// A calendar date, `YYYY-MM-DD`: `User.date(forKey:)`.
    public static let date = FieldType(rawValue: "date")
    /// An RFC 3339 date-time: `User.dateTime(forKey:)`.
    public static let datetime = FieldType(rawValue: "datetime")

    /// `rawValue`.
    public var description: String { rawValue }
}
