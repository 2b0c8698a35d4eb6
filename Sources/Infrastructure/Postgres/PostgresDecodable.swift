import FoundationEssentials
import Glibc

/// A Swift value that can be read from a result column (PostgreSQL's text output format).
public protocol PostgresDecodable {
    /// Reads a non-NULL value from its text form; `type` is the column's type.
    static func decode(text: PostgresText, type: PostgresDataType) throws -> Self
    /// The value for SQL NULL; throws unless the type can represent it (Optional).
    static func decodeNull(type: PostgresDataType) throws -> Self
}

extension PostgresDecodable {
    public static func decodeNull(type: PostgresDataType) throws -> Self {
        throw PostgresDecodingFailure("unexpected NULL for non-optional \(Self.self)")
    }
}

/// The bytes of one result value, valid only during `decode`; NUL-terminated like libpq's.
public struct PostgresText {
    /// The value's bytes, without the terminating NUL.
    public let bytes: UnsafeBufferPointer<UInt8>

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The value as a Swift String (validated UTF-8).
    public var string: String { String(decoding: bytes, as: UTF8.self) }
}

/// Why a value could not be decoded; the row wraps it into a `PostgresError` naming the column.
public struct PostgresDecodingFailure: Error, Sendable {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> Self {
        try Wrapped.decode(text: text, type: type)
    }

    public static func decodeNull(type: PostgresDataType) throws -> Self { nil }
}

extension String: PostgresDecodable {
    /// Any column's text form: text, varchar, json, jsonb, enums, …
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> String {
        text.string
    }
}

extension Bool: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> Bool {
        if text.bytes.count == 1 {
            if text.bytes[0] == UInt8(ascii: "t") { return true }
            if text.bytes[0] == UInt8(ascii: "f") { return false }
        }
        throw PostgresDecodingFailure("expected t or f for Bool")
    }
}

extension Int: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> Int {
        Int(try parseInteger(text.bytes, min: Int64(Int.min), max: Int64(Int.max), name: "Int"))
    }
}

extension Int64: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> Int64 {
        try parseInteger(text.bytes, min: .min, max: .max, name: "Int64")
    }
}

extension Int32: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> Int32 {
        Int32(try parseInteger(text.bytes, min: Int64(Int32.min), max: Int64(Int32.max), name: "Int32"))
    }
}

extension Int16: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> Int16 {
        Int16(try parseInteger(text.bytes, min: Int64(Int16.min), max: Int64(Int16.max), name: "Int16"))
    }
}

extension Double: PostgresDecodable {
    /// float8, float4, numeric and integer columns; NaN and ±Infinity included.
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> Double {
        guard let base = text.bytes.baseAddress, !text.bytes.isEmpty else {
            throw PostgresDecodingFailure("empty value for Double")
        }
        // libpq values are NUL-terminated, so strtod can read them in place.
        var end: UnsafeMutablePointer<CChar>? = nil
        let value = base.withMemoryRebound(to: CChar.self, capacity: text.bytes.count + 1) { start in
            let value = strtod(start, &end)
            return (value, end.map { UnsafePointer($0) - start } ?? 0)
        }
        guard value.1 == text.bytes.count else { throw PostgresDecodingFailure("not a number for Double") }
        return value.0
    }
}

extension UUID: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> UUID {
        let bytes = text.bytes
        guard bytes.count == 36 else { throw PostgresDecodingFailure("expected 36 characters for UUID") }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        try withUnsafeMutableBytes(of: &uuid) { out in
            var position = 0
            for index in 0..<16 {
                if position == 8 || position == 13 || position == 18 || position == 23 {
                    guard bytes[position] == UInt8(ascii: "-") else { throw PostgresDecodingFailure("malformed UUID") }
                    position += 1
                }
                guard let high = hexValue(bytes[position]), let low = hexValue(bytes[position + 1]) else {
                    throw PostgresDecodingFailure("malformed UUID")
                }
                out[index] = high << 4 | low
                position += 2
            }
        }
        return UUID(uuid: uuid)
    }
}

extension Date: PostgresDecodable {
    /// timestamptz (read as UTC: the connection sets TimeZone=UTC) or timestamp (taken as UTC).
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> Date {
        try PostgresTimestamp.parse(text.bytes)
    }
}

extension Array: PostgresDecodable where Element == UInt8 {
    /// bytea from its hex text output (`\x0a1b…`).
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> [UInt8] {
        let bytes = text.bytes
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"),
            bytes.count % 2 == 0
        else {
            throw PostgresDecodingFailure("expected hex bytea output (\\x…)")
        }
        let count = (bytes.count - 2) / 2
        return try [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            var position = 2
            for index in 0..<count {
                guard let high = hexValue(bytes[position]), let low = hexValue(bytes[position + 1]) else {
                    throw PostgresDecodingFailure("malformed hex in bytea")
                }
                out[index] = high << 4 | low
                position += 2
            }
            initialized = count
        }
    }
}

@inline(__always)
func hexValue(_ byte: UInt8) -> UInt8? {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
    default: return nil
    }
}

/// Parses an optionally signed decimal integer within `min...max`.
@inline(__always)
func parseInteger(_ bytes: UnsafeBufferPointer<UInt8>, min: Int64, max: Int64, name: String) throws -> Int64 {
    var index = 0
    var negative = false
    if bytes.count > 0, bytes[0] == UInt8(ascii: "-") { negative = true; index = 1 }
    guard index < bytes.count else { throw PostgresDecodingFailure("not an integer for \(name)") }
    // Accumulate negatively so that Int64.min fits.
    var value: Int64 = 0
    while index < bytes.count {
        let digit = bytes[index] &- UInt8(ascii: "0")
        guard digit < 10 else { throw PostgresDecodingFailure("not an integer for \(name)") }
        let (times, o1) = value.multipliedReportingOverflow(by: 10)
        let (next, o2) = times.subtractingReportingOverflow(Int64(digit))
        guard !o1, !o2 else { throw PostgresDecodingFailure("out of range for \(name)") }
        value = next
        index += 1
    }
    if !negative {
        guard value != .min else { throw PostgresDecodingFailure("out of range for \(name)") }
        value = -value
    }
    guard value >= min, value <= max else { throw PostgresDecodingFailure("out of range for \(name)") }
    return value
}
