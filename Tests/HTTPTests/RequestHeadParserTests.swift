import HTTP
import TestSupport
import Testing

/// The corpus, parsed whole, split in two at every boundary, and fed byte by byte: the outcome
/// must never depend on how the bytes were segmented.
@Suite(.testThreads) struct RequestHeadParserTests {
    @Test func corpusSize() {
        #expect(RequestCorpus.all.count >= 150)
        let names = RequestCorpus.all.map(\.name)
        #expect(Set(names).count == names.count, "corpus names must be unique")
    }

    @Test("whole input", arguments: RequestCorpus.all)
    func whole(_ c: ParseCase) {
        let outcome = RequestDriver.run(c.input, limits: c.limits)
        #expect(outcome == c.expected, "\(c.name)\nexpected:\n\(c.expected)\nactual:\n\(outcome)")
    }

    @Test("split in two at every byte boundary", arguments: RequestCorpus.all)
    func everySplit(_ c: ParseCase) {
        for cut in RequestDriver.splitPoints(c.input) {
            let outcome = RequestDriver.run(c.input, cuts: [cut], limits: c.limits)
            guard outcome == c.expected else {
                Issue.record("\(c.name): split at \(cut) of \(c.input.count)\nexpected:\n\(c.expected)\nactual:\n\(outcome)")
                return
            }
        }
    }

    @Test("byte by byte", arguments: RequestCorpus.all)
    func byteByByte(_ c: ParseCase) {
        let outcome = RequestDriver.run(c.input, cuts: Array(1..<c.input.count), limits: c.limits)
        #expect(outcome == c.expected, "\(c.name)\nexpected:\n\(c.expected)\nactual:\n\(outcome)")
    }

    @Test("split in three at a spread of boundaries", arguments: RequestCorpus.all.filter { $0.input.count <= 600 })
    func threePieces(_ c: ParseCase) {
        let n = c.input.count
        for first in stride(from: 1, to: n, by: 7) {
            for second in stride(from: first + 1, to: n, by: 5) {
                let outcome = RequestDriver.run(c.input, cuts: [first, second], limits: c.limits)
                guard outcome == c.expected else {
                    Issue.record("\(c.name): split at \(first), \(second)\nexpected:\n\(c.expected)\nactual:\n\(outcome)")
                    return
                }
            }
        }
    }

    // MARK: - The parser's own contract

    @Test func needMoreThenComplete() {
        var parser = RequestHeadParser()
        let bytes = Array("GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b".utf8)
        guard case .needMore = bytes[0..<10].withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("expected needMore")
            return
        }
        guard case .complete(let head, let consumed) = bytes.withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("expected complete")
            return
        }
        #expect(head.path == "/a")
        #expect(consumed == 28)
        // The parser resets itself: the next request starts at `consumed`.
        guard case .needMore = bytes[consumed...].withUnsafeBytes({ parser.parse($0) }) else {
            Issue.record("expected needMore for the next request")
            return
        }
    }

    @Test func resetForgetsAPartialHead() {
        var parser = RequestHeadParser()
        _ = Array("GARBAGE WITHOUT END".utf8).withUnsafeBytes { parser.parse($0) }
        parser.reset()
        let result = Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8).withUnsafeBytes { parser.parse($0) }
        guard case .complete(_, let consumed) = result else {
            Issue.record("expected complete, got \(result)")
            return
        }
        #expect(consumed == 27)
    }

    @Test func customLimits() {
        var limits = HTTPLimits()
        limits.maxRequestLineBytes = 16
        limits.maxFieldBytes = 10
        limits.maxHeaderCount = 2
        limits.maxHeaderBytes = 36
        func code(_ text: String) -> String? {
            let outcome = RequestDriver.run(Array(text.utf8), limits: limits)
            if case .failed(let code, _) = outcome.end { return code }
            #expect(outcome.end == .clean)
            return nil
        }
        #expect(code("GET /01 HTTP/1.1\r\nHost: h\r\n\r\n") == nil)  // request line of 16 bytes
        #expect(code("GET /012 HTTP/1.1\r\nHost: h\r\n\r\n") == "request_line_too_long")
        #expect(code("GET / HTTP/1.1\r\nHost: h\r\n\r\n") == nil)
        #expect(code("GET / HTTP/1.1\r\nHost: abcd\r\nA: 1\r\n\r\n") == nil)  // field of 10 bytes, head of 36
        #expect(code("GET / HTTP/1.1\r\nHost: abcde\r\n\r\n") == "header_field_too_large")
        #expect(code("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\n\r\n") == nil)
        #expect(code("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n") == "too_many_headers")
        #expect(code("GET / HTTP/1.1\r\nHost: 12\r\nA: 1234\r\n\r\n") == "headers_too_large")  // 37 bytes
    }

    @Test func parsedHeadersLookUpIgnoringCase() {
        var parser = RequestHeadParser()
        let result = Array("GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\n\r\n".utf8).withUnsafeBytes { parser.parse($0) }
        guard case .complete(let head, _) = result else {
            Issue.record("expected complete")
            return
        }
        #expect(head.headers["HOST"] == "h")
        #expect(head.headers.values("X-A") == ["1", "2"])
        #expect(head.headers.contains("x-A"))
        #expect(head.headers["Content-Length"] == nil)
    }
}
