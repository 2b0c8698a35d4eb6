/// One complete SMTP reply: its three-digit code and the text of each of its lines.
struct SMTPReply: Sendable, Equatable, CustomStringConvertible {
    var code: Int
    /// The text after the code and separator of each line, without the line end.
    var lines: [String]

    init(code: Int, lines: [String]) {
        self.code = code
        self.lines = lines
    }

    /// 2xx: the command succeeded.
    var isPositiveCompletion: Bool { (200..<300).contains(code) }
    /// 3xx: go on (the 334 of AUTH, the 354 of DATA).
    var isPositiveIntermediate: Bool { (300..<400).contains(code) }
    /// 4xx: refused for now; the same command may succeed later.
    var isTransientFailure: Bool { (400..<500).contains(code) }
    /// 5xx: refused for good.
    var isPermanentFailure: Bool { (500..<600).contains(code) }

    /// The reply as the server wrote it, one line per line, without the CR.
    var description: String {
        if lines.isEmpty { return String(code) }
        return lines.enumerated().map { index, line in
            let separator = index == lines.count - 1 ? " " : "-"
            return line.isEmpty && separator == " " ? String(code) : "\(code)\(separator)\(line)"
        }.joined(separator: "\n")
    }
}
