/// An unpadded base64 codec over one 64-character alphabet, strict when decoding.
///
/// Strict means each byte string has exactly one accepted text: no `=` padding, no whitespace,
/// no characters outside the alphabet, no length that leaves a lone character (`count % 4 == 1`)
/// and no set bits in the unused low bits of the last character. Without the last rule several
/// texts decode to the same bytes, which matters when a text is compared or used as a key.
struct Base64Alphabet: Sendable {
    private let encodeTable: [UInt8]
    /// 0xff marks a byte outside the alphabet.
    private let decodeTable: [UInt8]

    static let standard = Base64Alphabet(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
    static let url = Base64Alphabet(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    private init(_ characters: String) {
        encodeTable = Array(characters.utf8)
        precondition(encodeTable.count == 64)
        var decodeTable = [UInt8](repeating: 0xff, count: 256)
        for (value, character) in encodeTable.enumerated() {
            decodeTable[Int(character)] = UInt8(value)
        }
        self.decodeTable = decodeTable
    }

    /// The number of characters that encode `byteCount` bytes without padding.
    static func encodedLength(of byteCount: Int) -> Int {
        (byteCount * 4 + 2) / 3
    }

    func encode(_ bytes: [UInt8]) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(Self.encodedLength(of: bytes.count))
        var index = 0
        while index + 3 <= bytes.count {
            let group =
                UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                | UInt32(bytes[index + 2])
            text.append(encodeTable[Int(group >> 18 & 63)])
            text.append(encodeTable[Int(group >> 12 & 63)])
            text.append(encodeTable[Int(group >> 6 & 63)])
            text.append(encodeTable[Int(group & 63)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let group = UInt32(bytes[index]) << 16
            text.append(encodeTable[Int(group >> 18 & 63)])
            text.append(encodeTable[Int(group >> 12 & 63)])
        case 2:
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            text.append(encodeTable[Int(group >> 18 & 63)])
            text.append(encodeTable[Int(group >> 12 & 63)])
            text.append(encodeTable[Int(group >> 6 & 63)])
        default:
            break
        }
        return String(decoding: text, as: UTF8.self)
    }

    func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = text.utf8
        let count = utf8.count
        guard count % 4 != 1 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count * 3 / 4)
        var group: UInt32 = 0
        var filled = 0
        for character in utf8 {
            let value = decodeTable[Int(character)]
            guard value != 0xff else { return nil }
            group = group << 6 | UInt32(value)
            filled += 1
            if filled == 4 {
                bytes.append(UInt8(truncatingIfNeeded: group >> 16))
                bytes.append(UInt8(truncatingIfNeeded: group >> 8))
                bytes.append(UInt8(truncatingIfNeeded: group))
                group = 0
                filled = 0
            }
        }
        switch filled {
        case 2:  // 12 bits: one byte, 4 unused bits
            guard group & 0x0f == 0 else { return nil }
            bytes.append(UInt8(truncatingIfNeeded: group >> 4))
        case 3:  // 18 bits: two bytes, 2 unused bits
            guard group & 0x03 == 0 else { return nil }
            bytes.append(UInt8(truncatingIfNeeded: group >> 10))
            bytes.append(UInt8(truncatingIfNeeded: group >> 2))
        default:
            break
        }
        return bytes
    }
}
