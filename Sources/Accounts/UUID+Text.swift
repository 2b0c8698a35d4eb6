import FoundationEssentials

extension UUID {
    /// The lowercase canonical text (`5f0c…-…`), as ids appear in JSON, ETags and throttle keys;
    /// formatted by hand because Foundation's `uuidString` goes through `snprintf`.
    public var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { buffer in
                var out = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        buffer[out] = UInt8(ascii: "-")
                        out += 1
                    }
                    buffer[out] = UUID.hexDigit(bytes[index] >> 4)
                    buffer[out + 1] = UUID.hexDigit(bytes[index] & 0xF)
                    out += 2
                }
                return out
            }
        }
    }

    /// The lowercase hexadecimal digit of a value below 16.
    @inline(__always)
    static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") &+ value : UInt8(ascii: "a") &+ value &- 10
    }
}
