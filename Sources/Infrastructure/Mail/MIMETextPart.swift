/// A text/plain or text/html body in UTF-8 with the transfer encoding its content needs:
/// 7bit when it is printable ASCII in short lines, quoted-printable otherwise.
struct MIMETextPart {
    enum TransferEncoding: String {
        case sevenBit = "7bit"
        case quotedPrintable = "quoted-printable"
    }

    let mediaType: String
    let encoding: TransferEncoding
    /// The encoded content, CRLF line ends, no line end after the last line.
    let body: String

    /// `text`'s line ends, whatever they are (CRLF, LF or CR), become CRLF.
    init(mediaType: String, text: String) {
        self.mediaType = mediaType
        let lines = Self.lines(of: text)
        encoding = lines.allSatisfy(Self.isSevenBitSafe) ? .sevenBit : .quotedPrintable
        body = encoding == .sevenBit ? lines.joined(separator: "\r\n") : QuotedPrintable.encode(lines: lines)
    }

    /// The Content-Type and Content-Transfer-Encoding fields.
    var headers: String {
        HeaderField.simple("Content-Type", mediaType, parameters: ["charset=utf-8"])
            + HeaderField.simple("Content-Transfer-Encoding", encoding.rawValue)
    }

    /// Printable ASCII or tabs, no longer than a header's preferred 78 characters, and without
    /// trailing whitespace, which transports may strip.
    private static func isSevenBitSafe(_ line: Substring) -> Bool {
        line.utf8.count <= HeaderField.preferredLineLength
            && line.utf8.allSatisfy { (0x20...0x7E).contains($0) || $0 == UInt8(ascii: "\t") }
            && line.utf8.last != UInt8(ascii: " ") && line.utf8.last != UInt8(ascii: "\t")
    }

    /// The lines of `text`, split at CRLF, LF or a lone CR.
    static func lines(of text: String) -> [Substring] {
        // Swift treats CRLF as one Character, so each of the three is one separator here.
        text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\r\n" || $0 == "\n" || $0 == "\r" })
    }
}
