/// An exact decimal number (PostgreSQL `numeric`) carried as its decimal string.
public struct PostgresNumeric: Hashable, Sendable, CustomStringConvertible {
    /// The decimal text, e.g. `-12.50`, or `NaN`.
    public let description: String

    /// Accepts `[+-]digits[.digits][e[+-]digits]`, `NaN` and `±Infinity`.
    public init?(_ string: String) {
        guard PostgresNumeric.isValid(string) else { return nil }
        description = string
    }

    public init(_ value: Int) { description = String(value) }

    /// The nearest Double (lossy).
    public var doubleValue: Double? { Double(description) }

    static func isValid(_ string: String) -> Bool {
        if string == "NaN" || string == "Infinity" || string == "-Infinity" { return true }
        var bytes = Substring(string).utf8[...]
        if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        let integer = bytes.prefix(while: isDigit)
        bytes = bytes.dropFirst(integer.count)
        var fractionCount = 0
        if bytes.first == UInt8(ascii: ".") {
            bytes = bytes.dropFirst()
            let fraction = bytes.prefix(while: isDigit)
            fractionCount = fraction.count
            bytes = bytes.dropFirst(fraction.count)
        }
        guard integer.count + fractionCount > 0 else { return false }
        if let e = bytes.first, e == UInt8(ascii: "e") || e == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
            let exponent = bytes.prefix(while: isDigit)
            guard !exponent.isEmpty else { return false }
            bytes = bytes.dropFirst(exponent.count)
        }
        return bytes.isEmpty
    }
}

extension PostgresNumeric: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(description, type: .numeric)
    }
}

extension PostgresNumeric: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> PostgresNumeric {
        guard let value = PostgresNumeric(text.string) else { throw PostgresDecodingFailure("not a decimal number") }
        return value
    }
}
