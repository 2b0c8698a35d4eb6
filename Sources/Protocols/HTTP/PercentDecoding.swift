/// `%XX` decoding of path segments and query components (RFC 3986 §2.1).
public enum PercentDecoding {
    /// Decodes `%XX` escapes (and `+` as a space when `plusAsSpace`, for query strings as forms
    /// send them); nil for a malformed escape, invalid UTF-8 or an escaped NUL.
    public static func decode(_ text: Substring, plusAsSpace: Bool = false) -> String? {
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) else {
            return String(text)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(ASCII.hexValue), let low = iterator.next().flatMap(ASCII.hexValue) else { return nil }
                let decoded = UInt8(high << 4 | low)
                guard decoded != 0 else { return nil }
                bytes.append(decoded)
            } else if plusAsSpace, byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else {
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}

/// The parameters of a request's query string (`limit=10&after=abc`), percent-decoded.
public struct QueryParameters: Sendable {
    private var values: [String: String] = [:]

    /// Parses `query`; a parameter that appears twice keeps its first value, and a value that does
    /// not decode is kept as U+FFFD so that it fails validation instead of vanishing.
    public init(_ query: String?) {
        guard let query else { return }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = PercentDecoding.decode(parts[0], plusAsSpace: true), values[name] == nil else { continue }
            values[name] = parts.count > 1 ? PercentDecoding.decode(parts[1], plusAsSpace: true) ?? "\u{FFFD}" : ""
        }
    }

    public subscript(name: String) -> String? { values[name] }

    /// Every parameter, by name (the first value of each).
    public var all: [String: String] { values }
}
