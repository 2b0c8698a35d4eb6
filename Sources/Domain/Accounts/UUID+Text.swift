import FoundationEssentials
import Cryptography

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
                    buffer[out] = Hex.digit(bytes[index] >> 4)
                    buffer[out + 1] = Hex.digit(bytes[index] & 0xF)
                    out += 2
                }
                return out
            }
        }
    }
}
