import HTTP
import Testing

/// A request as a connection would see it: the parsed head, and the body read after it.
struct ParsedRequest: Equatable, Sendable, CustomStringConvertible {
    var method: String
    var target: String
    var path: String
    var query: String?
    var version: HTTPVersion
    /// Every field in order, as `HTTPHeaders` iterates them.
    var headers: [Field]
    var framing: BodyFraming
    var keepAlive: Bool
    var expectContinue: Bool
    /// Bytes of the head, as `RequestHeadParser` reported them.
    var consumed: Int
    /// Offset in the input just after this request's body: where the next request starts.
    var end: Int
    /// The body: Content-Length bytes or the decoded chunks.
    var body: [UInt8]

    var description: String {
        "\(method) \(target) \(version) path=\(path) query=\(query ?? "nil") \(framing) keepAlive=\(keepAlive) "
            + "expectContinue=\(expectContinue) consumed=\(consumed) end=\(end) body=\(String(decoding: body, as: UTF8.self).debugDescription) "
            + "headers=\(headers)"
    }
}

struct Field: Equatable, Sendable, CustomStringConvertible {
    var name: String
    var value: String
    init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
    var description: String { "\(name): \(value.debugDescription)" }
}

/// How the input ended after the last complete request.
enum End: Equatable, Sendable {
    /// Every byte belonged to a complete request.
    case clean
    /// A request head is incomplete.
    case needMoreHead
    /// A head is complete but its body is not.
    case needMoreBody
    /// The parser or the chunked decoder failed with this code and status.
    case failed(code: String, status: Int)

    static func failed(_ error: HTTPParseError) -> End { .failed(code: error.code.rawValue, status: error.status.code) }
}

/// Everything a connection gets out of one input.
struct Outcome: Equatable, Sendable, CustomStringConvertible {
    var requests: [ParsedRequest]
    var end: End

    var description: String {
        requests.enumerated().map { "  [\($0.offset)] \($0.element)\n" }.joined() + "  end: \(end)"
    }
}

/// Drives `RequestHeadParser` and `ChunkedDecoder` the way the connection does.
///
/// The input arrives in pieces that end at `cuts` (and at its end). After each arrival the head
/// parser is given the buffer from the current request's first byte to the last byte received,
/// and a chunked decoder the body bytes not yet decoded.
enum RequestDriver {
    static func run(_ input: [UInt8], cuts: [Int] = [], limits: HTTPLimits = .default) -> Outcome {
        enum Phase {
            case head
            case fixed(remaining: Int)
            case chunked(ChunkedDecoder)
        }
        var parser = RequestHeadParser(limits: limits)
        var requests: [ParsedRequest] = []
        var phase = Phase.head
        var start = 0  // first byte of the current request
        var pos = 0  // first byte not yet consumed
        var current: ParsedRequest?

        func finish() {
            current!.end = pos
            requests.append(current!)
            current = nil
            start = pos
            phase = .head
        }

        for available in cuts + [input.count] {
            precondition(available >= pos && available <= input.count)
            progress: while true {
                switch phase {
                case .head:
                    guard available > start else { break progress }
                    let result = input[start..<available].withUnsafeBytes { parser.parse($0) }
                    switch result {
                    case .needMore:
                        break progress
                    case .failed(let error):
                        return Outcome(requests: requests, end: .failed(error))
                    case .complete(let head, let consumed):
                        if consumed <= 0 || consumed > available - start { Issue.record("consumed \(consumed) out of range") }
                        pos = start + consumed
                        current = ParsedRequest(
                            method: head.method.rawValue, target: head.target, path: head.path, query: head.query,
                            version: head.version, headers: head.headers.map { Field($0.name, $0.value) },
                            framing: head.framing, keepAlive: head.keepAlive, expectContinue: head.expectContinue,
                            consumed: consumed, end: 0, body: [])
                        switch head.framing {
                        case .none: finish()
                        case .contentLength(let length): phase = .fixed(remaining: length)
                        case .chunked: phase = .chunked(ChunkedDecoder(maxBodyBytes: limits.maxBodyBytes, limits: limits))
                        }
                    }
                case .fixed(let remaining):
                    let take = min(remaining, available - pos)
                    current!.body += input[pos..<(pos + take)]
                    pos += take
                    if take == remaining {
                        finish()
                    } else {
                        phase = .fixed(remaining: remaining - take)
                        break progress
                    }
                case .chunked(var decoder):
                    guard available > pos else { break progress }
                    var body = current!.body
                    let result = input[pos..<available].withUnsafeBytes { piece in
                        decoder.decode(piece) { body += $0 }
                    }
                    current!.body = body
                    // bodyBytes counts each chunk when its size line ends, before its data arrives.
                    if decoder.bodyBytes < body.count || decoder.bodyBytes > limits.maxBodyBytes {
                        Issue.record("bodyBytes \(decoder.bodyBytes) with \(body.count) emitted")
                    }
                    switch result {
                    case .needMore:
                        pos = available
                        phase = .chunked(decoder)
                        break progress
                    case .done(let consumed):
                        if consumed <= 0 || consumed > available - pos { Issue.record("decoder consumed \(consumed) out of range") }
                        if decoder.bodyBytes != body.count { Issue.record("bodyBytes \(decoder.bodyBytes) != \(body.count) at the end") }
                        pos += consumed
                        finish()
                    case .failed(let error):
                        return Outcome(requests: requests, end: .failed(error))
                    }
                }
            }
        }
        switch phase {
        case .head: return Outcome(requests: requests, end: start == input.count ? .clean : .needMoreHead)
        case .fixed, .chunked: return Outcome(requests: requests, end: .needMoreBody)
        }
    }

    /// Cut points to try: every boundary for small inputs; for large ones every boundary near a
    /// line end, near the start and end, and a stride through the rest, which keeps the O(n²)
    /// sweep affordable while still splitting at every place a decision is made.
    static func splitPoints(_ input: [UInt8], exhaustiveUpTo: Int = 20_000) -> [Int] {
        let n = input.count
        guard n > 1 else { return [] }
        if n <= exhaustiveUpTo { return Array(1..<n) }
        var points = Set<Int>()
        for k in 1..<min(n, 80) { points.insert(k) }
        for k in max(1, n - 80)..<n { points.insert(k) }
        for k in stride(from: 1, to: n, by: 509) { points.insert(k) }
        var lineStarts = [0]
        for (i, byte) in input.enumerated() where byte == 10 || byte == 13 {
            for k in (i - 3)...(i + 3) where k > 0 && k < n { points.insert(k) }
            if byte == 10 { lineStarts.append(i + 1) }
        }
        // Around the default limits, measured from every line start: where early failures fire.
        for lineStart in lineStarts {
            for limit in [8 * 1024, 32 * 1024, 1024 * 1024] {
                for k in (lineStart + limit - 3)...(lineStart + limit + 4) where k > 0 && k < n { points.insert(k) }
            }
        }
        return points.sorted()
    }
}
