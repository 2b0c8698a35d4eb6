import FoundationEssentials

/// A Swift value that can be sent to PostgreSQL as a bound parameter.
public protocol PostgresEncodable: Sendable {
    /// Appends exactly one parameter to `bindings`.
    func encode(into bindings: inout PostgresBindings)
}

extension Optional: PostgresEncodable where Wrapped: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        if let value = self { value.encode(into: &bindings) } else { bindings.appendNull() }
    }
}

extension String: PostgresEncodable {
    /// Sent untyped so that the server reads it as the column's type (text, varchar, citext, jsonb…).
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(self, type: .unspecified)
    }
}

extension Substring: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .unspecified) { $0.append(contentsOf: self.utf8) }
    }
}

extension Bool: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .bool) { $0.append(self ? UInt8(ascii: "t") : UInt8(ascii: "f")) }
    }
}

extension Int: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .int8) { appendDecimal(Int64(self), to: &$0) }
    }
}

extension Int64: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .int8) { appendDecimal(self, to: &$0) }
    }
}

extension Int32: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .int4) { appendDecimal(Int64(self), to: &$0) }
    }
}

extension Int16: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .int2) { appendDecimal(Int64(self), to: &$0) }
    }
}

extension Double: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .float8) { buffer in
            if isNaN {
                buffer.append(contentsOf: "NaN".utf8)
            } else if isInfinite {
                buffer.append(contentsOf: (self < 0 ? "-Infinity" : "Infinity").utf8)
            } else {
                // Swift's description is the shortest text that reads back to the same Double.
                buffer.append(contentsOf: self.description.utf8)
            }
        }
    }
}

extension UUID: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .uuid) { buffer in
            let hex: StaticString = "0123456789abcdef"
            withUnsafeBytes(of: self.uuid) { raw in
                hex.withUTF8Buffer { digits in
                    for (index, byte) in raw.enumerated() {
                        if index == 4 || index == 6 || index == 8 || index == 10 { buffer.append(UInt8(ascii: "-")) }
                        buffer.append(digits[Int(byte >> 4)])
                        buffer.append(digits[Int(byte & 0x0f)])
                    }
                }
            }
        }
    }
}

extension Date: PostgresEncodable {
    /// Sent as `YYYY-MM-DD HH:MM:SS.ffffff+00` (UTC, microseconds) typed timestamptz.
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .timestamptz) { PostgresTimestamp.append(self, to: &$0) }
    }
}

extension Array: PostgresEncodable where Element == UInt8 {
    /// bytea, sent in binary format: no escaping, no hex doubling.
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendBinary(self, type: .bytea)
    }
}

/// Appends the decimal digits of `value` without creating a String.
@inline(__always)
func appendDecimal(_ value: Int64, to buffer: inout [UInt8]) {
    if value == 0 { buffer.append(UInt8(ascii: "0")); return }
    var magnitude = value.magnitude
    if value < 0 { buffer.append(UInt8(ascii: "-")) }
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
        var count = 0
        while magnitude > 0 {
            digits[count] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
            magnitude /= 10
            count += 1
        }
        while count > 0 {
            count -= 1
            buffer.append(digits[count])
        }
    }
}

/// A one-dimensional array parameter, sent as text in PostgreSQL's array syntax: cast it in the
/// SQL (`\(keys)::text[]`, `\(limits)::integer[]`). Every element is quoted and escaped, so no
/// element can end the array or add one.
public struct PostgresArray<Element: LosslessStringConvertible & Sendable>: PostgresEncodable {
    public var elements: [Element]

    public init(_ elements: [Element]) {
        self.elements = elements
    }

    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .unspecified) { buffer in
            buffer.append(UInt8(ascii: "{"))
            for (index, element) in elements.enumerated() {
                if index > 0 { buffer.append(UInt8(ascii: ",")) }
                buffer.append(UInt8(ascii: "\""))
                for byte in element.description.utf8 {
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { buffer.append(UInt8(ascii: "\\")) }
                    buffer.append(byte)
                }
                buffer.append(UInt8(ascii: "\""))
            }
            buffer.append(UInt8(ascii: "}"))
        }
    }
}
