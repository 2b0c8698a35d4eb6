import HTTP
import Testing

/// Bytes written as string literals, joinable with raw bytes: `"X: " + Raw([0xFF]) + "\r\n"`.
struct Raw: ExpressibleByStringInterpolation, Sendable {
    var bytes: [UInt8]
    init(_ bytes: [UInt8]) { self.bytes = bytes }
    init(stringLiteral value: String) { bytes = Array(value.utf8) }
    init(stringInterpolation: DefaultStringInterpolation) { bytes = Array(String(stringInterpolation: stringInterpolation).utf8) }
    init(_ string: String) { bytes = Array(string.utf8) }
    static func + (lhs: Raw, rhs: Raw) -> Raw { Raw(lhs.bytes + rhs.bytes) }
    static func * (lhs: Raw, count: Int) -> Raw { Raw(Array([[UInt8]](repeating: lhs.bytes, count: count).joined())) }
    var count: Int { bytes.count }
}

/// One corpus entry: an input and exactly what the connection must get out of it.
struct ParseCase: Sendable, CustomTestStringConvertible {
    var name: String
    var input: [UInt8]
    var expected: Outcome
    var limits: HTTPLimits = .default

    var testDescription: String { name }

    /// One request of a (possibly pipelined) input: its head, its raw body, and what must come out.
    struct Part {
        var head: Raw
        var rawBody: Raw
        var expected: ParsedRequest

        /// A request whose head is exactly `head` (so `consumed == head.count`), followed by `body` raw.
        /// `path` defaults to the target, `headers` to every field of `head` split by hand, `decoded`
        /// (the body the application sees) to the raw body.
        static func part(
            _ head: Raw, body rawBody: Raw = "", decoded: Raw? = nil,
            method: String = "GET", target: String = "/", path: String? = nil, query: String? = nil,
            version: HTTPVersion = .http1_1, headers: [Field]? = nil, framing: BodyFraming = .none,
            keepAlive: Bool = true, expectContinue: Bool = false
        ) -> Part {
            let expected = ParsedRequest(
                method: method, target: target, path: path ?? target, query: query, version: version,
                headers: headers ?? fieldsByHand(head.bytes), framing: framing, keepAlive: keepAlive,
                expectContinue: expectContinue, consumed: head.count, end: head.count + rawBody.count,
                body: (decoded ?? rawBody).bytes)
            return Part(head: head, rawBody: rawBody, expected: expected)
        }
    }

    /// A single valid request and nothing after it.
    static func valid(
        _ name: String, _ head: Raw, body rawBody: Raw = "", decoded: Raw? = nil,
        method: String = "GET", target: String = "/", path: String? = nil, query: String? = nil,
        version: HTTPVersion = .http1_1, headers: [Field]? = nil, framing: BodyFraming = .none,
        keepAlive: Bool = true, expectContinue: Bool = false, limits: HTTPLimits = .default
    ) -> ParseCase {
        pipeline(
            name,
            [
                Part.part(
                    head, body: rawBody, decoded: decoded, method: method, target: target, path: path,
                    query: query, version: version, headers: headers, framing: framing,
                    keepAlive: keepAlive, expectContinue: expectContinue)
            ], limits: limits)
    }

    /// Several requests back to back, then `rest`, which must end as `end`.
    static func pipeline(
        _ name: String, _ parts: [Part], rest: Raw = "", end: End = .clean,
        limits: HTTPLimits = .default
    ) -> ParseCase {
        var input: [UInt8] = []
        var requests: [ParsedRequest] = []
        for part in parts {
            var expected = part.expected
            expected.end += input.count
            requests.append(expected)
            input += part.head.bytes + part.rawBody.bytes
        }
        return ParseCase(name: name, input: input + rest.bytes, expected: Outcome(requests: requests, end: end), limits: limits)
    }

    /// An input that must fail with exactly this code and status, after no complete request.
    static func invalid(_ name: String, _ input: Raw, _ code: String, _ status: Int, limits: HTTPLimits = .default) -> ParseCase {
        ParseCase(name: name, input: input.bytes, expected: Outcome(requests: [], end: .failed(code: code, status: status)), limits: limits)
    }

    /// An input that is fine so far but incomplete.
    static func incomplete(_ name: String, _ input: Raw, _ end: End = .needMoreHead, limits: HTTPLimits = .default) -> ParseCase {
        ParseCase(name: name, input: input.bytes, expected: Outcome(requests: [], end: end), limits: limits)
    }

    /// The oracle for field values: lines after the request line, split at the first colon,
    /// trimmed of SP and HTAB (RFC 9112 §5.1), written independently of the parser.
    static func fieldsByHand(_ head: [UInt8]) -> [Field] {
        var lines: [[UInt8]] = []
        var line: [UInt8] = []
        var i = 0
        while i < head.count {
            if head[i] == 13, i + 1 < head.count, head[i + 1] == 10 {
                lines.append(line)
                line = []
                i += 2
            } else {
                line.append(head[i])
                i += 1
            }
        }
        while let first = lines.first, first.isEmpty { lines.removeFirst() }
        var fields: [Field] = []
        for line in lines.dropFirst() {
            if line.isEmpty { break }
            let colon = line.firstIndex(of: 58)!
            var value = line[(colon + 1)...]
            while let c = value.first, c == 32 || c == 9 { value.removeFirst() }
            while let c = value.last, c == 32 || c == 9 { value.removeLast() }
            fields.append(Field(String(decoding: line[..<colon], as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
        return fields
    }
}
