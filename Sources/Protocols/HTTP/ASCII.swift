/// Byte classes of RFC 9110 / 9112, as lookup tables.
enum ASCII {
    static let cr: UInt8 = 13
    static let lf: UInt8 = 10
    static let space: UInt8 = 32
    static let tab: UInt8 = 9
    static let colon: UInt8 = 58

    @inline(__always) static func lower(_ byte: UInt8) -> UInt8 {
        (byte &- 65) < 26 ? byte | 0x20 : byte  // only A...Z map
    }

    /// tchar: "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    static let tokenTable: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(byte)] = true }
        for char in "!#$%&'*+-.^_`|~".utf8 { table[Int(char)] = true }
        return table
    }()

    @inline(__always) static func isToken(_ byte: UInt8) -> Bool { tokenTable[Int(byte)] }

    /// Characters of a Host value: unreserved, sub-delims, ":" and "[]" for IP literals, "%" for escapes.
    static let hostTable: [Bool] = {
        var table = [Bool](repeating: false, count: 256)
        for byte in UInt8(ascii: "0")...UInt8(ascii: "9") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "a")...UInt8(ascii: "z") { table[Int(byte)] = true }
        for byte in UInt8(ascii: "A")...UInt8(ascii: "Z") { table[Int(byte)] = true }
        for char in "-._~!$&'()*+,;=:[]%".utf8 { table[Int(char)] = true }
        return table
    }()

    @inline(__always) static func isHostByte(_ byte: UInt8) -> Bool { hostTable[Int(byte)] }

    /// field-vchar / SP / HTAB: what may stand inside a field value.
    @inline(__always) static func isFieldValue(_ byte: UInt8) -> Bool {
        byte == tab || (byte >= 0x20 && byte != 0x7F)
    }

    @inline(__always) static func isWhitespace(_ byte: UInt8) -> Bool { byte == space || byte == tab }

    /// Bytes allowed in a request-target: visible ASCII only (RFC 3986 characters, checked loosely).
    @inline(__always) static func isTargetByte(_ byte: UInt8) -> Bool { byte > 0x20 && byte < 0x7F }

    @inline(__always) static func hexValue(_ byte: UInt8) -> UInt64? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt64(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt64(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt64(byte - UInt8(ascii: "A") + 10)
        default: return nil
        }
    }

    /// Compares bytes with a lowercase ASCII literal, ignoring case.
    static func equalsIgnoringCase(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        guard bytes.count == lowercase.utf8CodeUnitCount else { return false }
        let literal = lowercase.utf8Start
        for i in 0..<bytes.count where lower(bytes[i]) != literal[i] { return false }
        return true
    }
}
