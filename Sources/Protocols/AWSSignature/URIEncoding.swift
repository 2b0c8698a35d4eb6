/// Percent-encoding as Signature Version 4 wants it: every byte but the unreserved characters of
/// RFC 3986 (`A-Z a-z 0-9 - . _ ~`) as `%XX` with upper-case digits, spaces as `%20`, never `+`.
public enum URIEncoding {
    /// `text` encoded for a query's name or value, or one segment of a path (`/` encoded too).
    public static func encode(_ text: String) -> String { encode(text, keepingSlashes: false) }

    /// An object key as a path: each segment encoded, the slashes between them kept.
    public static func encodePath(_ text: String) -> String { encode(text, keepingSlashes: true) }

    private static func encode(_ text: String, keepingSlashes: Bool) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) || (keepingSlashes && byte == UInt8(ascii: "/")) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hexDigit(byte >> 4))
                bytes.append(hexDigit(byte & 0x0F))
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"): true
        default: false
        }
    }

    private static func hexDigit(_ value: UInt8) -> UInt8 { value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "A") + value - 10 }
}
