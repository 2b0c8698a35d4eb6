/// A login email address: trimmed, syntactically valid, compared case-insensitively.
public struct EmailAddress: Sendable, Hashable {
    /// As the user typed it, trimmed.
    public let value: String
    /// The unique login identity: ASCII-lowercased.
    public let normalized: String

    /// Validates `raw`; nil unless it is `local@domain` within RFC 5321's lengths.
    ///
    /// Deliberately ASCII: a dot-atom local part (RFC 5322 `atext` and dots) and a DNS host name
    /// with at least two labels. Quoted local parts, IP literals and internationalised addresses
    /// are refused, as most providers do.
    public init?(_ raw: String) {
        let trimmed = raw.trimmingASCIIWhitespace()
        let bytes = Array(trimmed.utf8)
        guard bytes.count >= 3, bytes.count <= 254,
            let at = bytes.lastIndex(of: UInt8(ascii: "@"))
        else { return nil }
        let local = bytes[..<at]
        let domain = bytes[(at + 1)...]
        guard !local.isEmpty, local.count <= 64, EmailAddress.isDotAtom(local),
            !domain.isEmpty, domain.count <= 253, EmailAddress.isHostName(domain)
        else { return nil }
        value = trimmed
        normalized = EmailAddress.normalized(trimmed)
    }

    /// The login identity of an address already stored (so already valid and trimmed): its
    /// ASCII-lowercased form, without validating it again.
    public static func normalized(_ stored: String) -> String {
        String(decoding: stored.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    private static let atext: Set<UInt8> = Set("!#$%&'*+-/=?^_`{|}~".utf8)

    private static func isDotAtom(_ part: ArraySlice<UInt8>) -> Bool {
        var previousDot = true  // no leading dot
        for byte in part {
            if byte == UInt8(ascii: ".") {
                if previousDot { return false }
                previousDot = true
            } else {
                guard isAlphanumeric(byte) || atext.contains(byte) else { return false }
                previousDot = false
            }
        }
        return !previousDot  // no trailing dot
    }

    private static func isHostName(_ domain: ArraySlice<UInt8>) -> Bool {
        let labels = domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        for label in labels {
            guard !label.isEmpty, label.count <= 63, label.first != UInt8(ascii: "-"), label.last != UInt8(ascii: "-"),
                label.allSatisfy({ isAlphanumeric($0) || $0 == UInt8(ascii: "-") })
            else { return false }
        }
        // The top-level label is not all digits (that would be an IP address).
        return !labels.last!.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
    }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
