/// A JSON number that remembers its literal, so `2`, `2.0` and `2e0` stay distinguishable.
///
/// The API types a custom field by its literal: a number without fraction or exponent is an
/// integer, any other is a double. Equality follows that split: two integers are equal when their
/// values are, two non-integers when their `Double` values are (`1e2 == 100.0`), and an integer never
/// equals a non-integer (`2 != 2.0`). Literals whose value does not fit are compared by text.
public struct JSONNumber: Sendable, Hashable, CustomStringConvertible {
    /// The literal exactly as written; always valid RFC 8259 number syntax.
    public let text: String
    /// Whether the literal has neither fraction nor exponent (`-0` and `12` do; `2.0` and `1e2` do not).
    public let isInteger: Bool

    /// Wraps text the parser has already validated.
    init(validatedText text: String, isInteger: Bool) {
        self.text = text
        self.isInteger = isInteger
    }

    public init(_ value: Int) {
        self.init(validatedText: String(value), isInteger: true)
    }

    public init(_ value: Int64) {
        self.init(validatedText: String(value), isInteger: true)
    }

    /// A double literal with the shortest text that reads back as the same `Double`, always with a
    /// fraction or an exponent so that it stays a double (`2.0`, `0.1`, `1e+300`); `nil` for NaN
    /// and infinities, which JSON cannot express.
    public init?(_ value: Double) {
        guard let text = JSONNumber.literal(for: value) else { return nil }
        self.init(validatedText: text, isInteger: false)
    }

    /// Validates `literal` against the RFC 8259 number grammar (no surrounding whitespace).
    public init?(literal: String) {
        var literal = literal
        let parsed: JSONNumber? = literal.withUTF8 { utf8 in
            var parser = JSONParser.Engine(utf8, limits: JSONLimits(maxNumberLength: .max))
            guard !utf8.isEmpty, let number = try? parser.parseNumber(), parser.isAtEnd else { return nil }
            return number
        }
        guard let parsed else { return nil }
        self = parsed
    }

    /// The value as an `Int64`, or `nil` when the literal is not an integer literal or does not fit.
    public var int64Value: Int64? {
        guard isInteger else { return nil }
        var text = text
        return text.withUTF8 { utf8 -> Int64? in
            var index = 0
            let negative = utf8[0] == UInt8(ascii: "-")
            if negative { index = 1 }
            // Accumulate negatively so that Int64.min, whose magnitude has no positive twin, fits.
            var value: Int64 = 0
            while index < utf8.count {
                let digit = Int64(utf8[index] &- UInt8(ascii: "0"))
                let (shifted, o1) = value.multipliedReportingOverflow(by: 10)
                let (next, o2) = shifted.subtractingReportingOverflow(digit)
                if o1 || o2 { return nil }
                value = next
                index += 1
            }
            if negative { return value }
            return value == .min ? nil : -value
        }
    }

    /// The value as a `Double` (the nearest one for long literals), or `nil` when it is not finite,
    /// as with `1e400`. Integer literals convert too; `int64Value` is the exact reading for them.
    public var doubleValue: Double? {
        guard let value = Double(text), value.isFinite else { return nil }
        return value
    }

    public var description: String { text }

    public static func == (lhs: JSONNumber, rhs: JSONNumber) -> Bool {
        guard lhs.isInteger == rhs.isInteger else { return false }
        if lhs.isInteger {
            if let l = lhs.int64Value, let r = rhs.int64Value { return l == r }
        } else if let l = lhs.doubleValue, let r = rhs.doubleValue {
            return l == r
        }
        return lhs.text == rhs.text
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(isInteger)
        if isInteger, let value = int64Value {
            hasher.combine(value)
        } else if !isInteger, let value = doubleValue {
            hasher.combine(value)
        } else {
            hasher.combine(text)
        }
    }

    /// Swift's `description` is already the shortest round-trip form; only integral values printed
    /// without an exponent (`2.0`) need checking, and they already carry `.0`.
    static func literal(for value: Double) -> String? {
        guard value.isFinite else { return nil }
        var text = value.description
        if !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
            text += ".0"
        }
        return text
    }
}
