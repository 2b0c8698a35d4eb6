import Foundation
import Testing

/// Independent decoders, to check that what the encoders write reads back as what they were given.
enum Decoders {
    /// RFC 2045 quoted-printable: soft breaks removed, `=XX` as bytes.
    static func quotedPrintable(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "="), index + 2 < bytes.count + 1 {
                if index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "\r"), bytes[index + 2] == UInt8(ascii: "\n") {
                    index += 3
                    continue
                }
                output.append(UInt8(String(decoding: bytes[(index + 1)...(index + 2)], as: UTF8.self), radix: 16)!)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return output
    }

    /// The text of adjacent RFC 2047 encoded-words (the whitespace between them does not count).
    /// A word that is not one fails the test (an encoder's mistake must not crash the whole run)
    /// and gives a text that matches nothing.
    static func encodedWords(_ words: [String]) -> String {
        var bytes: [UInt8] = []
        for word in words {
            guard word.hasPrefix("=?UTF-8?"), word.hasSuffix("?="), word.count >= 12 else {
                Issue.record("not an encoded-word: \(word.debugDescription)")
                return "<not an encoded-word: \(word)>"
            }
            let body = word.dropFirst(8).dropLast(2)
            let encoding = body.first
            let payload = String(body.dropFirst(2))
            if encoding == "B" {
                guard let decoded = Data(base64Encoded: payload) else {
                    Issue.record("not base64 in an encoded-word: \(word.debugDescription)")
                    return "<not base64: \(word)>"
                }
                bytes += decoded
            } else {
                bytes += quotedPrintable(payload.replacingOccurrences(of: "_", with: " "))
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// A header field unfolded (RFC 5322 §2.2.3: CRLF before whitespace removed).
    static func unfolded(_ field: String) -> String {
        field.replacingOccurrences(of: "\r\n ", with: " ").replacingOccurrences(of: "\r\n\t", with: "\t")
    }
}

/// A small, seeded generator so failures repeat.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
