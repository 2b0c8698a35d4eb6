// libFuzzer target for RequestHeadParser and ChunkedDecoder, and for the upload-side parsers that
// take client bytes too: MultipartFormData (the input as a body) and ByteRange (its start as a
// Range header).
//
// Built by fuzz/run.sh together with Sources/Protocols/HTTP/*.swift as one module, without SwiftPM. Each
// input is read as a connection would read it: heads, then Content-Length or chunked bodies,
// pipelined until the bytes run out or something fails. It is read whole, split in two at a
// point derived from the first byte, and (when short) byte by byte; the outcomes must be equal
// and every reported length must stay inside the input and the limits.

/// Traps with `message`; unlike `precondition`, keeps the message in `-O` builds.
@inline(__always)
private func check(_ condition: Bool, _ message: @autoclosure () -> String = "invariant") {
    if !condition { fatalError(message()) }
}

/// Small limits so that every limit is reachable from a short input.
private let limits: HTTPLimits = {
    var limits = HTTPLimits()
    limits.maxRequestLineBytes = 64
    limits.maxFieldBytes = 48
    limits.maxHeaderBytes = 256
    limits.maxHeaderCount = 6
    limits.maxBodyBytes = 96
    limits.maxChunkExtensionBytes = 12
    return limits
}()

private struct Parsed: Equatable {
    var method: String
    var target: String
    var path: String
    var query: String?
    var version: HTTPVersion
    var fields: [String]
    var framing: BodyFraming
    var keepAlive: Bool
    var expectContinue: Bool
    var consumed: Int
    var end = 0
    var body: [UInt8] = []
}

private enum End: Equatable {
    case clean, needMoreHead, needMoreBody
    case failed(HTTPParseError)
}

private struct Outcome: Equatable {
    var requests: [Parsed] = []
    var end = End.clean
}

/// Reads `input` arriving in pieces that end at `cuts`, checking every invariant on the way.
private func read(_ input: UnsafeBufferPointer<UInt8>, cuts: [Int]) -> Outcome {
    enum Phase {
        case head
        case fixed(remaining: Int)
        case chunked(ChunkedDecoder)
    }
    var parser = RequestHeadParser(limits: limits)
    var outcome = Outcome()
    var phase = Phase.head
    var start = 0
    var pos = 0
    var current: Parsed?

    func finish() {
        current!.end = pos
        outcome.requests.append(current!)
        current = nil
        start = pos
        phase = .head
    }

    for available in cuts + [input.count] {
        progress: while true {
            switch phase {
            case .head:
                guard available > start else { break progress }
                let buffer = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(input)[start..<available])
                switch parser.parse(buffer) {
                case .needMore:
                    break progress
                case .failed(let error):
                    outcome.end = .failed(error)
                    return outcome
                case .complete(let head, let consumed):
                    check(consumed > 0 && consumed <= available - start, "consumed \(consumed) outside the buffer")
                    // Up to four empty lines may precede the head proper.
                    check(consumed <= limits.maxHeaderBytes + 8, "head of \(consumed) bytes passed the limit")
                    check(head.headers.count <= limits.maxHeaderCount)
                    check(head.version == .http1_0 || head.version == .http1_1)
                    check(!head.target.isEmpty)
                    if case .contentLength(let length) = head.framing { check(length > 0) }
                    if head.expectContinue { check(head.version == .http1_1 && head.framing != .none) }
                    pos = start + consumed
                    current = Parsed(
                        method: head.method.rawValue, target: head.target, path: head.path, query: head.query,
                        version: head.version, fields: head.headers.map { $0.name + ":" + $0.value },
                        framing: head.framing, keepAlive: head.keepAlive, expectContinue: head.expectContinue,
                        consumed: consumed)
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
                let piece = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(input)[pos..<available])
                var body = current!.body
                let result = decoder.decode(piece) { bytes in
                    check(bytes.count > 0)
                    body += bytes
                }
                current!.body = body
                check(body.count <= decoder.bodyBytes, "emitted more than announced")
                check(decoder.bodyBytes <= limits.maxBodyBytes, "body of \(decoder.bodyBytes) bytes passed the limit")
                switch result {
                case .needMore:
                    pos = available
                    phase = .chunked(decoder)
                    break progress
                case .done(let consumed):
                    check(consumed > 0 && consumed <= piece.count, "decoder consumed \(consumed) of \(piece.count)")
                    check(decoder.bodyBytes == body.count)
                    pos += consumed
                    finish()
                case .failed(let error):
                    outcome.end = .failed(error)
                    return outcome
                }
            }
        }
    }
    switch phase {
    case .head: outcome.end = start == input.count ? .clean : .needMoreHead
    case .fixed, .chunked: outcome.end = .needMoreBody
    }
    return outcome
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeBufferPointer(start: data, count: size)
    let whole = read(input, cuts: [])
    if size > 1 {
        let split = 1 + Int(data[0]) * (size - 1) / 256
        let outcome = read(input, cuts: [split])
        check(outcome == whole, "split at \(split) gave \(outcome), whole gave \(whole)")
    }
    if size > 1, size <= 512 {
        let outcome = read(input, cuts: Array(1..<size))
        check(outcome == whole, "byte by byte gave \(outcome), whole gave \(whole)")
    }
    // The same bytes as a multipart body: a file part found must lie inside it.
    if let part = try? MultipartFormData.filePart(in: UnsafeRawBufferPointer(input), boundary: "xb") {
        check(part.range.lowerBound >= 0 && part.range.upperBound <= size, "file part \(part.range) outside \(size) bytes")
    }
    // Their start as a Range header against a representation of 0–255 bytes: a partial range lies inside it.
    let representation = size > 0 ? Int(data[0]) : 0
    if case .partial(let range) = ByteRange.evaluate(String(decoding: input.prefix(48), as: UTF8.self), size: representation) {
        check(
            range.length >= 1 && range.offset >= 0 && range.offset + range.length <= representation,
            "range \(range) outside \(representation) bytes")
    }
    // A response to whatever was parsed must serialize without trapping.
    if let last = whole.requests.last {
        var buffer: [UInt8] = []
        ResponseSerializer.serialize(
            Response(status: .ok, body: last.body), requestMethod: HTTPMethod(last.method),
            keepAlive: last.keepAlive, date: HTTPDate.format(secondsSinceEpoch: size),
            version: last.version, into: &buffer)
        check(buffer.count >= 17)
    }
    return 0
}
