import FoundationEssentials

/// One e-mail: its envelope-free headers and a text body with an optional HTML alternative.
public struct MailMessage: Sendable {
    public var from: MailAddress
    public var to: MailAddress
    public var subject: String
    public var text: String
    /// When set, the message is multipart/alternative with `text` as the plain fallback.
    public var html: String?
    public var date: Date
    /// Without angle brackets, e.g. "uuid@host"; rendered as `<…>`.
    public var messageID: String

    public init(from: MailAddress, to: MailAddress, subject: String, text: String, html: String? = nil, date: Date, messageID: String) {
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
        self.date = date
        self.messageID = messageID
    }

    /// The RFC 5322 / MIME bytes: CRLF line ends, headers folded to 78 characters where
    /// possible (never over 998), non-ASCII header text as RFC 2047 encoded-words, bodies in
    /// 7bit or quoted-printable. The result is 7-bit unless an address itself is non-ASCII.
    public func rendered() -> [UInt8] {
        var head = HeaderField.simple("Date", RFC5322Date.string(date))
        let identifier = messageID.unicodeScalars.filter { $0.value > 0x20 && $0.value != 0x7F && $0 != "<" && $0 != ">" }
        head += HeaderField.simple("Message-ID", "<\(String(String.UnicodeScalarView(identifier)))>")
        head += HeaderField.mailbox("From", from)
        head += HeaderField.mailbox("To", to)
        head += HeaderField.unstructured("Subject", subject)
        head += HeaderField.simple("MIME-Version", "1.0")
        let plain = MIMETextPart(mediaType: "text/plain", text: text)
        guard let html else {
            // A message ends with a line end (RFC 5322 §2.1); one more would add an empty line.
            let end = plain.body.isEmpty || plain.body.hasSuffix("\r\n") ? "" : "\r\n"
            return Array((head + plain.headers + "\r\n" + plain.body + end).utf8)
        }

        let boundary = Self.randomBoundary()
        let rich = MIMETextPart(mediaType: "text/html", text: html)
        head += HeaderField.simple("Content-Type", "multipart/alternative", parameters: ["boundary=\"\(boundary)\""])
        // A delimiter is CRLF "--boundary" (RFC 2046 §5.1.1): the CRLF belongs to it, not to the
        // part before; the first one's is the blank line that ends the head.
        var body = ""
        for part in [plain, rich] { body += "\r\n--\(boundary)\r\n" + part.headers + "\r\n" + part.body }
        body += "\r\n--\(boundary)--\r\n"
        return Array((head + body).utf8)
    }

    /// "=_" and 32 random hex digits: quoted-printable never produces "=_" (an "=" is followed by
    /// two hex digits or a line end), and a 7bit part containing 128 random bits is not a worry.
    private static func randomBoundary() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return "=_" + hex(high) + hex(low)
    }
}
