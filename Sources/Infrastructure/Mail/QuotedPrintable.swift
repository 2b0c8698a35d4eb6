/// Quoted-printable (RFC 2045 §6.7) for MIME text bodies.
enum QuotedPrintable {
    /// RFC 2045's limit for encoded lines, the soft break's "=" included.
    static let maximumLineLength = 76

    /// Encodes `lines` (the text split at its line ends, which become hard CRLF breaks): '=',
    /// control characters and every byte of a non-ASCII character as `=XX`, whitespace at a
    /// line end too (transports strip it), and soft breaks (`=` CRLF) so no line exceeds 76
    /// characters. A character's bytes stay on one line, and so does each `=XX`.
    static func encode(lines: [Substring]) -> String {
        lines.map(encode(line:)).joined(separator: "\r\n")
    }

    private static func encode(line: Substring) -> String {
        let scalars = Array(line.unicodeScalars)
        var output: [String] = []
        var current = ""
        for (index, scalar) in scalars.enumerated() {
            let isLast = index == scalars.count - 1
            let token = encode(scalar, atLineEnd: isLast)
            // A segment followed by a soft break has room for 75 characters and the "=".
            let room = isLast ? maximumLineLength : maximumLineLength - 1
            if current.utf8.count + token.utf8.count > room {
                output.append(current + "=")
                current = ""
            }
            current += token
        }
        output.append(current)
        return output.joined(separator: "\r\n")
    }

    private static func encode(_ scalar: Unicode.Scalar, atLineEnd: Bool) -> String {
        let isLiteral = (0x21...0x7E).contains(scalar.value) && scalar != "=" || (scalar == " " || scalar == "\t") && !atLineEnd
        return isLiteral ? String(scalar) : hexEncoded(Array(String(scalar).utf8))
    }

    /// `=XX` for each byte, upper-case hex as RFC 2045 requires.
    static func hexEncoded(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789ABCDEF".utf8)
        var result: [UInt8] = []
        for byte in bytes { result += [UInt8(ascii: "="), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
        return String(decoding: result, as: UTF8.self)
    }
}
