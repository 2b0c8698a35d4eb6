import HTTP
import TestSupport
import Testing

/// The decoder on its own; whole requests with chunked bodies are in `RequestCorpus.chunked`.
@Suite(.testThreads) struct ChunkedDecoderTests {
    /// Decodes `input` delivered in pieces ending at `cuts`, as the connection would feed it.
    func decode(
        _ input: String, cuts: [Int] = [], maxBodyBytes: Int = 1 << 20,
        limits: HTTPLimits = .default
    ) -> (result: ChunkedDecoder.Result, body: String, consumed: Int) {
        let bytes = Array(input.utf8)
        var decoder = ChunkedDecoder(maxBodyBytes: maxBodyBytes, limits: limits)
        var body: [UInt8] = []
        var pos = 0
        for end in cuts + [bytes.count] where end > pos {
            let result = bytes[pos..<end].withUnsafeBytes { decoder.decode($0) { body += $0 } }
            // bodyBytes counts a chunk when its size line ends, before the data is emitted.
            #expect(decoder.bodyBytes >= body.count)
            switch result {
            case .needMore: pos = end
            case .done(let consumed):
                #expect(decoder.bodyBytes == body.count)
                return (.done(consumed: pos + consumed), String(decoding: body, as: UTF8.self), pos + consumed)
            case .failed: return (result, String(decoding: body, as: UTF8.self), -1)
            }
        }
        return (.needMore, String(decoding: body, as: UTF8.self), pos)
    }

    @Test func doneReportsWhereTheNextRequestStarts() {
        let input = "5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n"
        let whole = decode(input)
        #expect(whole.result == .done(consumed: 15))
        #expect(whole.body == "hello")
        for cut in 1..<input.utf8.count {
            let split = decode(input, cuts: [cut])
            #expect(split.body == "hello")
            #expect(split.consumed == 15, "cut at \(cut)")
        }
    }

    @Test func afterDoneNothingMoreIsConsumed() {
        var decoder = ChunkedDecoder(maxBodyBytes: 100)
        let first = Array("0\r\n\r\n".utf8).withUnsafeBytes { decoder.decode($0) { _ in Issue.record("no body expected") } }
        #expect(first == .done(consumed: 5))
        let again = Array("more".utf8).withUnsafeBytes { decoder.decode($0) { _ in Issue.record("no body expected") } }
        #expect(again == .done(consumed: 0))
        let empty = [UInt8]().withUnsafeBytes { decoder.decode($0) { _ in Issue.record("no body expected") } }
        #expect(empty == .done(consumed: 0))
    }

    @Test func emptyInputNeedsMore() {
        var decoder = ChunkedDecoder(maxBodyBytes: 100)
        let result = [UInt8]().withUnsafeBytes { decoder.decode($0) { _ in } }
        #expect(result == .needMore)
        #expect(decoder.bodyBytes == 0)
    }

    @Test func dataIsEmittedAsItArrives() {
        var decoder = ChunkedDecoder(maxBodyBytes: 100)
        var pieces: [String] = []
        for piece in ["A\r\n012", "3456", "789\r\n0\r\n", "\r\n"] {
            _ = Array(piece.utf8).withUnsafeBytes { decoder.decode($0) { pieces.append(String(decoding: $0, as: UTF8.self)) } }
        }
        #expect(pieces == ["012", "3456", "789"])
        #expect(decoder.bodyBytes == 10)
    }

    @Test func theDecoderLimitIsItsOwn() {
        // `maxBodyBytes` may be raised per route above `limits.maxBodyBytes`.
        var limits = HTTPLimits()
        limits.maxBodyBytes = 1
        #expect(decode("5\r\nhello\r\n0\r\n\r\n", maxBodyBytes: 5, limits: limits).result == .done(consumed: 15))
        #expect(decode("5\r\nhello\r\n0\r\n\r\n", maxBodyBytes: 4, limits: limits).result == .failed(.bodyTooLarge))
    }

    @Test func bodyTooLargeIsDecidedBeforeTheData() {
        let result = decode("65\r\n", maxBodyBytes: 100)
        #expect(result.result == .failed(.bodyTooLarge))
        #expect(result.body.isEmpty)
    }

    @Test func customExtensionLimit() {
        var limits = HTTPLimits()
        limits.maxChunkExtensionBytes = 4
        #expect(decode("1;abcd\r\nx\r\n0\r\n\r\n", limits: limits).result == .done(consumed: 16))
        #expect(decode("1;abcde\r\nx\r\n0\r\n\r\n", limits: limits).result == .failed(.chunkExtensionTooLong))
        #expect(decode("1   ;a\r\nx\r\n0\r\n\r\n", limits: limits).result == .done(consumed: 16))
        #expect(decode("1    ;a\r\nx\r\n0\r\n\r\n", limits: limits).result == .failed(.chunkExtensionTooLong))
        #expect(decode("1" + String(repeating: " ", count: 100), limits: limits).result == .failed(.chunkExtensionTooLong))
    }

    @Test func trailerLimitsFollowTheHeaderLimits() {
        var limits = HTTPLimits()
        limits.maxHeaderCount = 2
        limits.maxFieldBytes = 6
        #expect(decode("0\r\nA: 1\r\nB: 2\r\n\r\n", limits: limits).result == .done(consumed: 17))
        #expect(decode("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: limits).result == .failed(.tooManyHeaders))
        #expect(decode("0\r\nA: 123\r\n\r\n", limits: limits).result == .done(consumed: 13))
        #expect(decode("0\r\nA: 1234\r\n\r\n", limits: limits).result == .failed(.fieldTooLarge))
    }

    @Test func byteByByteEqualsWhole() {
        let inputs = [
            "3\r\nabc\r\n10;x=\"y\"\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\nrest",
            "0000000000000003\r\nabc\r\n0\r\n\r\n",
            "3\r\nabc\r\n00000000000000003\r\n",
            "3\r\nabc\n",
            "3 ;x\r\nabc\r\n0\r\nT : v\r\n\r\n",
        ]
        for input in inputs {
            let whole = decode(input)
            let bytewise = decode(input, cuts: Array(1..<input.utf8.count))
            #expect(whole.result == bytewise.result, "\(input.debugDescription)")
            #expect(whole.body == bytewise.body)
            #expect(whole.consumed == bytewise.consumed)
        }
    }
}
