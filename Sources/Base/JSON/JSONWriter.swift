/// Writes compact JSON straight into a byte buffer, inserting commas itself, so that responses and
/// problem documents need no intermediate tree.
///
/// ```swift
/// var writer = JSONWriter()
/// writer.beginObject()
/// writer.key("status"); writer.int(422)
/// writer.key("errors"); writer.beginArray(); writer.string("a"); writer.endArray()
/// writer.endObject()
/// // writer.bytes == Array(#"{"status":422,"errors":["a"]}"#.utf8)
/// ```
///
/// The writer trusts its caller to pair `begin`/`end` calls and to put a `key` before each value
/// in an object; it does not check the structure.
public struct JSONWriter: Sendable {
    /// The output so far.
    public var bytes: [UInt8]
    /// Whether the next key or value needs a comma before it.
    private var needsComma = false

    /// Starts an empty document with room for `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends to existing bytes, for example after a response head.
    public init(appendingTo bytes: [UInt8]) {
        self.bytes = bytes
    }

    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    public mutating func beginArray() {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
    }

    public mutating func endArray() {
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// Writes `"key":`; the next call writes its value.
    public mutating func key(_ key: String) {
        separate()
        writeQuoted(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func string(_ value: String) {
        separate()
        writeQuoted(value)
        needsComma = true
    }

    public mutating func int(_ value: Int) {
        int(Int64(value))
    }

    public mutating func int(_ value: Int64) {
        separate()
        writeDecimal(value)
        needsComma = true
    }

    /// Writes the shortest text that reads back as `value`, always as a double (`2.0`, not `2`).
    /// NaN and infinities have no JSON form and are written as `null`, as JavaScript does, so that
    /// a bad number cannot crash a response in the middle of being written.
    public mutating func double(_ value: Double) {
        guard let text = JSONNumber.literal(for: value) else {
            null()
            return
        }
        separate()
        bytes.append(contentsOf: text.utf8)
        needsComma = true
    }

    public mutating func number(_ value: JSONNumber) {
        separate()
        bytes.append(contentsOf: value.text.utf8)
        needsComma = true
    }

    public mutating func bool(_ value: Bool) {
        separate()
        if value {
            bytes.append(contentsOf: [UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "u"), UInt8(ascii: "e")])
        } else {
            bytes.append(contentsOf: [UInt8(ascii: "f"), UInt8(ascii: "a"), UInt8(ascii: "l"), UInt8(ascii: "s"), UInt8(ascii: "e")])
        }
        needsComma = true
    }

    public mutating func null() {
        separate()
        bytes.append(contentsOf: [UInt8(ascii: "n"), UInt8(ascii: "u"), UInt8(ascii: "l"), UInt8(ascii: "l")])
        needsComma = true
    }

    /// Writes a whole value; recursion follows the value's depth.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null:
            null()
        case .bool(let flag):
            bool(flag)
        case .number(let number):
            self.number(number)
        case .string(let string):
            self.string(string)
        case .array(let elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case .object(let object):
            beginObject()
            for (key, member) in object {
                self.key(key)
                self.value(member)
            }
            endObject()
        }
    }

    @inline(__always)
    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func writeDecimal(_ value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude != 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start..<20]))
        }
    }

    /// Escapes only what RFC 8259 requires: the quote, the backslash and control characters.
    /// Everything else, non-ASCII included, is copied as UTF-8, in runs.
    private mutating func writeQuoted(_ string: String) {
        bytes.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var run = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                if byte >= 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "\\") { continue }
                if run < index {
                    bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run..<index]))
                }
                writeEscape(byte)
                run = index + 1
            }
            if run < utf8.count {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[run...]))
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func writeEscape(_ byte: UInt8) {
        let short: UInt8
        switch byte {
        case UInt8(ascii: "\""): short = UInt8(ascii: "\"")
        case UInt8(ascii: "\\"): short = UInt8(ascii: "\\")
        case 0x08: short = UInt8(ascii: "b")
        case 0x0C: short = UInt8(ascii: "f")
        case 0x0A: short = UInt8(ascii: "n")
        case 0x0D: short = UInt8(ascii: "r")
        case 0x09: short = UInt8(ascii: "t")
        default:
            // Only bytes below 0x20 get here, so the high nibble is 0 or 1.
            let low = byte & 0x0F
            bytes.append(contentsOf: [
                UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                UInt8(ascii: "0") + byte >> 4,
                low < 10 ? UInt8(ascii: "0") + low : UInt8(ascii: "a") + low - 10,
            ])
            return
        }
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(short)
    }
}
