import Foundation

/// The value of one custom profile field, as JSON carries it.
///
/// The server keeps one `FieldType` per field name. A `date` travels as a `YYYY-MM-DD` string and
/// a `datetime` as an RFC 3339 string, so both are `.string` here: `User.date(forKey:)` and
/// `User.dateTime(forKey:)` read them, and `User.set(_:forKey:)` writes them in the right form.
/// Literals work: `user["height"] = 177.5`, `user["isMarried"] = true`.
public enum FieldValue: Hashable, Sendable, CustomStringConvertible {
    /// A string (also a `date` or `datetime` field).
    case string(String)
    /// An integer literal (`78`); also accepted for a `double` field.
    case integer(Int)
    /// Sent with a fraction (`180.0`), so that a first write makes the field a `double`.
    case double(Double)
    /// `true` or `false`.
    case bool(Bool)

    /// The string, for `.string` (also `date` and `datetime` fields).
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The integer, for `.integer`, and for a `.double` with no fractional part.
    public var integerValue: Int? {
        switch self {
        case .integer(let number): return number
        case .double(let number): return number.rounded(.towardZero) == number ? Int(exactly: number) : nil
        default: return nil
        }
    }

    /// The number, for `.double` and `.integer` (a `double` field written as `78` reads back as one).
    public var doubleValue: Double? {
        switch self {
        case .double(let number): return number
        case .integer(let number): return Double(number)
        default: return nil
        }
    }

    /// The flag, for `.bool`.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The calendar date, for a `.string` that is exactly `YYYY-MM-DD`.
    public var calendarDateValue: CalendarDate? { stringValue.flatMap(CalendarDate.init) }

    /// The instant, for a `.string` that is an RFC 3339 date-time.
    public var dateValue: Date? { stringValue.flatMap(Timestamp.parse) }

    /// The value as JSON would write it.
    public var description: String {
        switch self {
        case .string(let text):
            var output = ""
            JSONValue.writeString(text, into: &output)
            return output
        case .integer(let number): return String(number)
        case .double(let number): return (try? JSONValue.literal(number)) ?? "\(number)"
        case .bool(let flag): return flag ? "true" : "false"
        }
    }

    var json: JSONValue {
        switch self {
        case .string(let text): return .string(text)
        case .integer(let number): return .integer(number)
        case .double(let number): return .double(number)
        case .bool(let flag): return .bool(flag)
        }
    }

    /// A custom field from the server's JSON; nil for what is not a scalar.
    init?(json: JSONValue) {
        switch json {
        case .string(let text): self = .string(text)
        case .integer(let number): self = .integer(number)
        case .double(let number): self = .double(number)
        case .bool(let flag): self = .bool(flag)
        case .null, .array, .object: return nil
        }
    }
}

extension FieldValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral
{
    /// `user["nickname"] = "Ayu"`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// `user["weight"] = 78`.
    public init(integerLiteral value: Int) { self = .integer(value) }
    /// `user["height"] = 177.5`.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// `user["isMarried"] = true`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
