/// One contiguous span of a representation's bytes, as a `Range` request selects it (RFC 9110 §14).
///
/// Only single ranges are served. `evaluate` answers what to send for a `Range` header:
///
/// - no header, a unit other than `bytes`, or more than one range → `.full` (`200`): RFC 9110
///   §14.2 lets a server ignore `Range`, and multipart/byteranges answers are not worth their
///   cost for images;
/// - one satisfiable range → `.partial` (`206`), its last byte clamped to the representation;
/// - one unsatisfiable or syntactically invalid range → `.unsatisfiable` (`416`), which §14.2
///   allows for an invalid ranges-specifier. Numbers may be arbitrarily long: a first position
///   too large for `Int` lies past the end (`416`), a last position or suffix length that large
///   means "to the end" (clamped), as for any other value past the end.
///
/// Only `GET` takes ranges (§14.2); that, and `If-Range` through `ifRangeAllows`, are the
/// caller's to check first.
public struct ByteRange: Sendable, Hashable, CustomStringConvertible {
    /// Index of the first byte.
    public let offset: Int
    /// Number of bytes; at least one.
    public let length: Int

    public init(offset: Int, length: Int) {
        precondition(offset >= 0 && length > 0 && offset <= Int.max - length, "a byte range holds at least one byte")
        self.offset = offset
        self.length = length
    }

    /// Index of the last byte, as `Content-Range` writes it.
    public var lastOffset: Int { offset + length - 1 }
    /// The bytes as a half-open range, for slicing.
    public var range: Range<Int> { offset..<(offset + length) }
    public var description: String { "\(offset)-\(lastOffset)" }

    /// What to answer to a request that may carry `Range`.
    public enum Evaluation: Sendable, Hashable {
        /// Send the whole representation with `200`.
        case full
        /// Send these bytes with `206` and `Content-Range: bytes a-b/size` (`contentRange(size:)`).
        case partial(ByteRange)
        /// Answer `416` with `Content-Range: bytes */size` (`unsatisfiedContentRange(size:)`).
        case unsatisfiable
    }

    /// Evaluates a `Range` header value against a representation of `size` bytes.
    public static func evaluate(_ header: String?, size: Int) -> Evaluation {
        precondition(size >= 0, "a representation has a non-negative size")
        guard var header else { return .full }
        return header.withUTF8 { evaluate($0, size: size) }
    }

    /// The `Content-Range` value of a `206` answer: `bytes 0-499/1234`.
    public func contentRange(size: Int) -> String { "bytes \(offset)-\(lastOffset)/\(size)" }

    /// The `Content-Range` value of a `416` answer: `bytes */1234`.
    public static func unsatisfiedContentRange(size: Int) -> String { "bytes */\(size)" }

    /// Whether an `If-Range` precondition lets a `Range` apply (RFC 9110 §13.1.5).
    ///
    /// `etag` is the current entity-tag exactly as the `ETag` field sends it, quotes included.
    /// The comparison is strong: a weak tag on either side never matches. An HTTP-date is not
    /// compared (the answer is `false`, so the whole representation is sent), since a date
    /// is a weaker validator than the tag we always have. No `If-Range` lets the range apply.
    public static func ifRangeAllows(_ ifRange: String?, etag: String) -> Bool {
        guard let ifRange else { return true }
        let value = ifRange.utf8.trimmingOWS()
        let tag = etag.utf8
        guard tag.count >= 2, tag.first == UInt8(ascii: "\""), tag.last == UInt8(ascii: "\"") else { return false }
        return value.elementsEqual(tag)
    }

    // MARK: - Parsing

    static func evaluate(_ bytes: UnsafeBufferPointer<UInt8>, size: Int) -> Evaluation {
        let end = bytes.count
        var i = skipOWS(bytes, from: 0)
        let unitStart = i
        while i < end, ASCII.isToken(bytes[i]) { i += 1 }
        guard ASCII.equalsIgnoringCase(UnsafeBufferPointer(rebasing: bytes[unitStart..<i]), "bytes") else { return .full }
        i = skipOWS(bytes, from: i)
        guard i < end, bytes[i] == UInt8(ascii: "=") else { return .unsatisfiable }
        i += 1

        // range-set = 1#range-spec; empty list elements are allowed (RFC 9110 §5.6.1.2).
        var spec: Range<Int>?
        var elementStart = i
        while i <= end {
            if i == end || bytes[i] == UInt8(ascii: ",") {
                let element = trimOWS(bytes, elementStart..<i)
                if !element.isEmpty {
                    if spec != nil { return .full }
                    spec = element
                }
                elementStart = i + 1
            }
            i += 1
        }
        guard let spec else { return .unsatisfiable }
        return evaluate(spec: UnsafeBufferPointer(rebasing: bytes[spec]), size: size)
    }

    /// One `int-range` or `suffix-range`, without surrounding whitespace.
    private static func evaluate(spec: UnsafeBufferPointer<UInt8>, size: Int) -> Evaluation {
        var i = 0
        if spec[0] == UInt8(ascii: "-") {
            i = 1
            guard let suffix = digits(spec, &i), i == spec.count, suffix > 0, size > 0 else { return .unsatisfiable }
            let length = min(suffix, size)
            return .partial(ByteRange(offset: size - length, length: length))
        }
        guard let first = digits(spec, &i), i < spec.count, spec[i] == UInt8(ascii: "-") else { return .unsatisfiable }
        i += 1
        var last = Int.max
        if i < spec.count {
            guard let value = digits(spec, &i), i == spec.count, value >= first else { return .unsatisfiable }
            last = value
        }
        guard first < size else { return .unsatisfiable }
        return .partial(ByteRange(offset: first, length: min(last, size - 1) - first + 1))
    }

    /// Reads `1*DIGIT` at `i`, saturating at `Int.max`; nil if there is no digit.
    private static func digits(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Int? {
        let start = i
        var value = 0
        while i < bytes.count, bytes[i] &- UInt8(ascii: "0") < 10 {
            let digit = bytes[i] &- UInt8(ascii: "0")
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(digit))
            value = overflow1 || overflow2 ? Int.max : sum
            i += 1
        }
        return i > start ? value : nil
    }

    private static func skipOWS(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var i = start
        while i < bytes.count, ASCII.isWhitespace(bytes[i]) { i += 1 }
        return i
    }

    private static func trimOWS(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, ASCII.isWhitespace(bytes[lower]) { lower += 1 }
        while upper > lower, ASCII.isWhitespace(bytes[upper - 1]) { upper -= 1 }
        return lower..<upper
    }
}

private extension String.UTF8View {
    /// The view without leading and trailing spaces and tabs.
    func trimmingOWS() -> Substring.UTF8View {
        var slice = self[...]
        while let first = slice.first, ASCII.isWhitespace(first) { slice.removeFirst() }
        while let last = slice.last, ASCII.isWhitespace(last) { slice.removeLast() }
        return slice
    }
}
