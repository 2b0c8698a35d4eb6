/// Reads SMTP replies from the bytes received so far: a pure, incremental function with limits,
/// tested without sockets.
///
/// RFC 5321 §4.2: a reply is one or more lines `code-text CRLF` ending with `code SP text CRLF`
/// (or `code CRLF`), all with the same code. A bare LF is accepted as a line end too, as most
/// clients do; nothing else is lenient.
struct SMTPReplyParser: Sendable {
    /// What the bytes held.
    enum Result: Equatable, Sendable {
        /// A whole reply, and how many bytes it took from the front of the input.
        case complete(SMTPReply, consumed: Int)
        /// The reply is not finished: read more and parse again from the start.
        case needMore
        /// Not SMTP, or over a limit; the connection cannot be trusted any further.
        case malformed(String)
    }

    /// The longest line accepted, line end included. RFC 5321 §4.5.3.1.5 allows 512; some
    /// servers send longer EHLO lines, so there is room.
    var maximumLineLength: Int
    /// The most lines one reply may have (an EHLO reply has one per extension).
    var maximumLineCount: Int

    init(maximumLineLength: Int = 2048, maximumLineCount: Int = 100) {
        self.maximumLineLength = maximumLineLength
        self.maximumLineCount = maximumLineCount
    }

    func parse(_ bytes: some Collection<UInt8>) -> Result {
        var lines: [String] = []
        var code: Int?
        var lineStart = bytes.startIndex
        var consumed = 0
        while lineStart != bytes.endIndex {
            guard let newline = bytes[lineStart...].prefix(maximumLineLength).firstIndex(of: UInt8(ascii: "\n")) else {
                return bytes[lineStart...].count >= maximumLineLength
                    ? .malformed("a reply line is longer than \(maximumLineLength) bytes") : .needMore
            }
            var line = Array(bytes[lineStart..<newline])
            consumed += line.count + 1
            lineStart = bytes.index(after: newline)
            if line.last == UInt8(ascii: "\r") { line.removeLast() }
            guard line.count >= 3, let lineCode = Self.code(line[0], line[1], line[2]) else {
                return .malformed("a reply line does not start with a reply code")
            }
            if let code, code != lineCode { return .malformed("the lines of one reply have different codes (\(code), \(lineCode))") }
            code = lineCode
            let separator = line.count > 3 ? line[3] : UInt8(ascii: " ")
            guard separator == UInt8(ascii: " ") || separator == UInt8(ascii: "-") else {
                return .malformed("a reply code is followed by neither a space nor a hyphen")
            }
            let text = line.count > 4 ? Array(line[4...]) : []
            guard !text.contains(where: { ($0 < 0x20 && $0 != UInt8(ascii: "\t")) || $0 == 0x7F }) else {
                return .malformed("a reply line holds a control character")
            }
            lines.append(String(decoding: text, as: UTF8.self))
            if separator == UInt8(ascii: " ") { return .complete(SMTPReply(code: lineCode, lines: lines), consumed: consumed) }
            guard lines.count < maximumLineCount else { return .malformed("a reply has more than \(maximumLineCount) lines") }
        }
        return .needMore
    }

    /// The reply code of three ASCII digits: 2xx to 5xx, second digit 0 to 5 (RFC 5321 §4.2.1).
    private static func code(_ first: UInt8, _ second: UInt8, _ third: UInt8) -> Int? {
        let digits = [first, second, third].map { Int($0) - Int(UInt8(ascii: "0")) }
        guard (2...5).contains(digits[0]), (0...5).contains(digits[1]), (0...9).contains(digits[2]) else { return nil }
        return digits[0] * 100 + digits[1] * 10 + digits[2]
    }
}
