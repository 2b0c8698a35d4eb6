import HTTP
@testable import HTTPServer
import TestSupport
import Testing

/// One second of the monotonic clock, in nanoseconds.
private let second: UInt64 = 1_000_000_000

/// A fixed date so that written bytes can be compared exactly.
private let epoch = HTTPDate.format(secondsSinceEpoch: 0)

/// Timeouts chosen so that every deadline in these tests is easy to compute by hand.
private func configuration(_ adjust: (inout ServerConfiguration) -> Void = { _ in }) -> ConnectionConfiguration {
    var server = ServerConfiguration()
    server.headerTimeout = .seconds(10)
    server.idleTimeout = .seconds(75)
    server.bodyTimeoutGrace = .seconds(5)
    server.minBodyBytesPerSecond = 1000
    server.writeTimeout = .seconds(60)
    server.lingerTimeout = .seconds(2)
    adjust(&server)
    return ConnectionConfiguration(server)
}

private func machine(
    now: UInt64 = 0, bodyLimit: Int = 1 << 20,
    _ adjust: (inout ServerConfiguration) -> Void = { _ in }
) -> ConnectionStateMachine {
    ConnectionStateMachine(configuration: configuration(adjust), now: now, bodyLimit: { _ in bodyLimit })
}

extension ConnectionStateMachine {
    mutating func receive(_ text: String, at now: UInt64) -> Action {
        receive(Array(text.utf8), at: now)
    }

    mutating func receive(_ bytes: [UInt8], at now: UInt64) -> Action {
        bytes.withUnsafeBytes { received($0, now: now) }
    }

    mutating func respond(_ text: String = "ok", status: HTTPStatus = .ok, at now: UInt64) -> Action {
        respond(Response(status: status, contentType: "text/plain", body: Array(text.utf8)), date: epoch, now: now)
    }
}

/// The request carried by a `.dispatch`, or a recorded failure.
private func dispatched(_ action: ConnectionStateMachine.Action, sourceLocation: SourceLocation = #_sourceLocation) -> Request? {
    guard case .dispatch(let request) = action else {
        Issue.record("expected .dispatch, got \(action)", sourceLocation: sourceLocation)
        return nil
    }
    return request
}

/// The bytes of a `.write` as text, and whether the connection closes after them.
private func written(
    _ action: ConnectionStateMachine.Action,
    sourceLocation: SourceLocation = #_sourceLocation
) -> (text: String, close: Bool)? {
    guard case .write(let bytes, _, let close) = action else {
        Issue.record("expected .write, got \(action)", sourceLocation: sourceLocation)
        return nil
    }
    return (String(decoding: bytes, as: UTF8.self), close)
}

/// A file body the machine only passes along: it never reads the descriptor.
private final class StubFile: ResponseFile {
    let descriptor: Int32 = -1
    let offset = 0
    let length: Int
    init(length: Int) { self.length = length }
}

/// An event stream the machine only passes along: it never asks it for anything.
private final class StubEvents: ResponseEventStream {
    func next(_ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {}
}

private func get(_ path: String, _ extra: String = "") -> String {
    "GET \(path) HTTP/1.1\r\nHost: example.com\r\n\(extra)\r\n"
}

@Suite(.testThreads) struct ConnectionStateMachineTests {
    // MARK: - Requests and responses

    @Test func simpleGetIsDispatched() {
        var m = machine()
        let request = dispatched(m.receive(get("/hello?x=1"), at: 1 * second))
        #expect(request?.method == .get)
        #expect(request?.path == "/hello")
        #expect(request?.query == "x=1")
        #expect(request?.body == [])
        #expect(request?.headers["host"] == "example.com")
        // The handler runs now: no timer, and a little more input is still welcome.
        #expect(m.deadline == nil)
        #expect(m.wantsRead)
    }

    @Test func keepAliveResponseIsWrittenExactlyThenConnectionIsIdle() {
        var m = machine()
        _ = m.receive(get("/"), at: 1 * second)
        let action = m.respond("ok", at: 2 * second)
        let expected =
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
            + "Content-Type: text/plain\r\n\r\nok"
        #expect(action == .write(Array(expected.utf8), file: nil, close: false))
        #expect(m.deadline == 2 * second + 60 * second)  // write timeout
        #expect(m.writeCompleted(now: 3 * second) == .none)
        #expect(!m.isClosed)
        #expect(m.deadline == 3 * second + 75 * second)  // idle timeout from the end of the write
        // And the next request on the same connection is served.
        #expect(dispatched(m.receive(get("/again"), at: 4 * second))?.path == "/again")
    }

    @Test func respondWithoutPendingRequestDoesNothing() {
        var m = machine()
        #expect(m.respond(at: 1) == .none)
        #expect(m.writeCompleted(now: 1) == .none)
    }

    @Test func pipelinedRequestsAreDispatchedOneAtATimeInOrder() {
        var m = machine()
        let three = get("/1") + get("/2") + get("/3")
        #expect(dispatched(m.receive(three, at: 1))?.path == "/1")
        // Nothing more until the first response is completely written.
        #expect(written(m.respond("one", at: 2))?.close == false)
        #expect(m.receive(get("/4"), at: 3) == .none)
        #expect(dispatched(m.writeCompleted(now: 4))?.path == "/2")
        #expect(m.writeCompleted(now: 4) == .none)  // not writing: ignored
        _ = m.respond("two", at: 5)
        #expect(dispatched(m.writeCompleted(now: 6))?.path == "/3")
        _ = m.respond("three", at: 7)
        #expect(dispatched(m.writeCompleted(now: 8))?.path == "/4")
        _ = m.respond("four", at: 9)
        #expect(m.writeCompleted(now: 10) == .none)
        #expect(m.deadline == 10 + 75 * second)
    }

    @Test func pipelinedRequestWithBodyFollowedByAnother() {
        var m = machine()
        let input = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello" + get("/b")
        let first = dispatched(m.receive(input, at: 1))
        #expect(first?.path == "/a")
        #expect(first?.body == Array("hello".utf8))
        _ = m.respond(at: 2)
        #expect(dispatched(m.writeCompleted(now: 3))?.path == "/b")
    }

    @Test func requestSplitOverManyReads() {
        var m = machine()
        let bytes = Array(get("/split", "X-Long: \(String(repeating: "v", count: 300))\r\n").utf8)
        var now = 5 * second
        for byte in bytes.dropLast() {
            #expect(m.receive([byte], at: now) == .none)
            // The header deadline counts from the first byte, not the latest.
            #expect(m.deadline == 5 * second + 10 * second)
            now += 1_000
        }
        let request = dispatched(m.receive([bytes.last!], at: now))
        #expect(request?.path == "/split")
        #expect(request?.headers["x-long"]?.count == 300)
    }

    @Test func contentLengthBodyInPieces() {
        var m = machine()
        #expect(m.receive("POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhel", at: 10 * second) == .none)
        #expect(m.receive("lo wo", at: 10 * second + 1) == .none)
        let request = dispatched(m.receive("rld", at: 10 * second + 2))
        #expect(request?.body == Array("hello world".utf8))
        #expect(request?.method == .post)
    }

    @Test func chunkedBodyInPiecesThenNextRequest() {
        var m = machine()
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(m.receive(head + "5\r\nhel", at: 1) == .none)
        #expect(m.receive("lo\r\n6;ext=1\r\n wor", at: 2) == .none)
        #expect(m.receive("ld\r\n0\r\nTrailer: x\r\n", at: 3) == .none)
        let request = dispatched(m.receive("\r\n" + get("/next"), at: 4))
        #expect(request?.body == Array("hello world".utf8))
        _ = m.respond(at: 5)
        #expect(dispatched(m.writeCompleted(now: 6))?.path == "/next")
    }

    @Test func malformedChunkedBodyIsRejected() {
        var m = machine()
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(m.receive(head + "zz\r\n", at: 1) == .reject(.invalidChunkSize))
        #expect(written(m.respond(status: .badRequest, at: 2))?.close == true)
    }

    @Test func headResponseHasNoBody() {
        var m = machine()
        _ = m.receive("HEAD / HTTP/1.1\r\nHost: h\r\n\r\n", at: 1)
        let text = written(m.respond("hello", at: 2))?.text
        #expect(
            text == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
                + "Content-Type: text/plain\r\n\r\n")
    }

    // MARK: - File bodies

    @Test func fileResponseWritesTheHeadThenHandsOverTheFile() {
        var m = machine()
        _ = m.receive(get("/image"), at: 1)
        let file = StubFile(length: 5000)
        let action = m.respond(Response(status: .ok, contentType: "image/png", file: file), date: epoch, now: 2)
        let expected =
            "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nDate: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
            + "Content-Type: image/png\r\n\r\n"
        #expect(action == .write(Array(expected.utf8), file: file, close: false))
        #expect(m.deadline == 2 + 60 * second)
        m.writeProgressed(now: 3 * second)
        #expect(m.deadline == 3 * second + 60 * second)
    }

    @Test func headWithFileWritesTheHeadAndDropsTheFile() {
        var m = machine()
        _ = m.receive("HEAD /image HTTP/1.1\r\nHost: h\r\n\r\n", at: 1)
        weak var released: StubFile?
        let action: ConnectionStateMachine.Action = {
            let file = StubFile(length: 5000)
            released = file
            return m.respond(Response(status: .ok, contentType: "image/png", file: file), date: epoch, now: 2)
        }()
        guard case .write(let bytes, let file, let close) = action else {
            Issue.record("expected .write, got \(action)")
            return
        }
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix("HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n"))
        #expect(String(decoding: bytes, as: UTF8.self).hasSuffix("\r\n\r\n"))
        #expect(file == nil)
        #expect(!close)
        // Nothing in the machine keeps it: the response that held it is gone, and so is the file.
        #expect(released == nil)
    }

    @Test(arguments: [HTTPStatus.noContent, .notModified])
    func fileIsDroppedForStatusesWithoutContent(status: HTTPStatus) {
        var m = machine()
        _ = m.receive(get("/image"), at: 1)
        guard
            case .write(_, let file, _) = m.respond(
                Response(status: status, contentType: "image/png", file: StubFile(length: 9)),
                date: epoch, now: 2)
        else {
            Issue.record("expected .write")
            return
        }
        #expect(file == nil)
    }

    @Test func emptyFileNeedsNoSendfile() {
        var m = machine()
        _ = m.receive(get("/empty"), at: 1)
        let action = m.respond(Response(status: .ok, contentType: "text/plain", file: StubFile(length: 0)), date: epoch, now: 2)
        guard case .write(let bytes, let file, _) = action else { Issue.record("expected .write"); return }
        #expect(String(decoding: bytes, as: UTF8.self).contains("Content-Length: 0\r\n"))
        #expect(file == nil)
    }

    @Test func keepAliveAfterFileResponse() {
        var m = machine()
        _ = m.receive(get("/image"), at: 1)
        guard
            case .write(_, let file?, false) = m.respond(
                Response(status: .ok, contentType: "image/png", file: StubFile(length: 7)),
                date: epoch, now: 2)
        else {
            Issue.record("expected a keep-alive .write with a file")
            return
        }
        #expect((file as? any SizedResponseBody)?.length == 7)
        #expect(m.writeCompleted(now: 3) == .none)
        #expect(m.deadline == 3 + 75 * second)
        #expect(dispatched(m.receive(get("/next"), at: 4))?.path == "/next")
        #expect(written(m.respond("two", at: 5))?.text.hasSuffix("\r\n\r\ntwo") == true)
    }

    @Test func pipelinedRequestWaitsForTheFileBody() {
        var m = machine()
        #expect(dispatched(m.receive(get("/image") + get("/after"), at: 1))?.path == "/image")
        let file = StubFile(length: 3 << 20)
        guard
            case .write(_, let handed?, false) = m.respond(
                Response(status: .ok, contentType: "image/png", file: file),
                date: epoch, now: 2), handed === file
        else {
            Issue.record("expected .write with the file")
            return
        }
        // More input while the file is going out is only buffered.
        #expect(m.receive(get("/third"), at: 3) == .none)
        m.writeProgressed(now: 4)
        #expect(dispatched(m.writeCompleted(now: 5))?.path == "/after")
        _ = m.respond(at: 6)
        #expect(dispatched(m.writeCompleted(now: 7))?.path == "/third")
    }

    @Test func fileResponseWithConnectionCloseClosesAfterTheFile() {
        var m = machine()
        _ = m.receive(get("/image", "Connection: close\r\n"), at: 1)
        guard
            case .write(let bytes, _?, true) = m.respond(
                Response(status: .ok, contentType: "image/png", file: StubFile(length: 7)),
                date: epoch, now: 2)
        else {
            Issue.record("expected a closing .write with a file")
            return
        }
        #expect(String(decoding: bytes, as: UTF8.self).contains("Connection: close\r\n"))
        #expect(m.writeCompleted(now: 3) == .closeWrite)
    }

    // MARK: - Expect: 100-continue

    @Test func expectContinueWhenBodyHasNotArrived() {
        var m = machine()
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        #expect(m.receive(head, at: 1) == .sendContinue)
        #expect(dispatched(m.receive("hello", at: 2))?.body == Array("hello".utf8))
    }

    @Test func noContinueWhenBodyArrivedWithHead() {
        var m = machine()
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        #expect(dispatched(m.receive(head + "hello", at: 1))?.body == Array("hello".utf8))
    }

    @Test func noContinueWhenPartOfBodyArrivedWithHead() {
        var m = machine()
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        #expect(m.receive(head + "he", at: 1) == .none)
        #expect(dispatched(m.receive("llo", at: 2))?.body == Array("hello".utf8))
    }

    @Test func noContinueForChunkedBodyThatArrivedWithHead() {
        var m = machine()
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
        #expect(dispatched(m.receive(head + "2\r\nhi\r\n0\r\n\r\n", at: 1))?.body == Array("hi".utf8))
    }

    @Test func continueForChunkedHeadAlone() {
        var m = machine()
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n"
        #expect(m.receive(head, at: 1) == .sendContinue)
        #expect(dispatched(m.receive("2\r\nhi\r\n0\r\n\r\n", at: 2))?.body == Array("hi".utf8))
    }

    @Test func noContinueForHTTP10() {
        var m = machine()
        let head = "POST /up HTTP/1.0\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n"
        #expect(m.receive(head, at: 1) == .none)
    }

    // MARK: - Limits

    @Test func contentLengthOverLimitIsRejectedBeforeTheBody() {
        var m = machine(bodyLimit: 10)
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n"
        #expect(m.receive(head, at: 1) == .reject(.bodyTooLarge))
        let response = written(m.respond(Response(status: .contentTooLarge), date: epoch, now: 2))
        #expect(response?.close == true)
        #expect(response?.text.hasPrefix("HTTP/1.1 413 Content Too Large\r\n") == true)
        #expect(response?.text.contains("Connection: close\r\n") == true)
        #expect(m.writeCompleted(now: 3) == .closeWrite)
        // The body the client sends anyway is read and discarded while lingering.
        #expect(m.receive("hello world", at: 4) == .none)
        #expect(m.wantsRead)
    }

    @Test func contentLengthAtLimitIsAccepted() {
        var m = machine(bodyLimit: 5)
        #expect(dispatched(m.receive("POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello", at: 1)) != nil)
    }

    @Test func bodyLimitIsAskedWithTheRequestHead() {
        var m = ConnectionStateMachine(configuration: configuration(), now: 0) { head in
            head.path == "/big" ? 100 : 3
        }
        #expect(m.receive("POST /small HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n", at: 1) == .reject(.bodyTooLarge))
        var n = ConnectionStateMachine(configuration: configuration(), now: 0) { head in
            head.path == "/big" ? 100 : 3
        }
        #expect(n.receive("POST /big HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\n", at: 1) == .none)
    }

    @Test func chunkedBodyOverLimitIsRejected() {
        var m = machine(bodyLimit: 4)
        let head = "POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        #expect(m.receive(head + "3\r\nabc\r\n", at: 1) == .none)
        #expect(m.receive("2\r\n", at: 2) == .reject(.bodyTooLarge))
    }

    @Test func parseErrorIsAnsweredWithCloseThenLingers() {
        var m = machine()
        #expect(m.receive("GET / HTTP/1.1\nHost: h\r\n\r\n", at: 1 * second) == .reject(.bareLF))
        // More input after the error is not parsed.
        #expect(m.receive(get("/ignored"), at: 1 * second) == .none)
        let response = written(m.respond(Problem(.bareLF).response(), date: epoch, now: 2 * second))
        #expect(response?.close == true)
        #expect(response?.text.hasPrefix("HTTP/1.1 400 Bad Request\r\n") == true)
        #expect(response?.text.contains("Connection: close\r\n") == true)
        #expect(response?.text.contains("\"code\":\"bare_lf\"") == true)
        #expect(m.writeCompleted(now: 3 * second) == .closeWrite)
        #expect(m.deadline == 3 * second + 2 * second)
        #expect(m.receive("junk", at: 4 * second) == .none)
        #expect(m.timeout(now: 5 * second - 1) == .none)
        #expect(!m.isClosed)
        #expect(m.timeout(now: 5 * second) == .close)
        #expect(m.isClosed)
        #expect(!m.wantsRead)
    }

    @Test func peerEOFWhileLingeringCloses() {
        var m = machine()
        _ = m.receive("BAD\r\n\r\n", at: 1)
        _ = m.respond(status: .badRequest, at: 2)
        #expect(m.writeCompleted(now: 3) == .closeWrite)
        #expect(m.peerClosed() == .close)
        #expect(m.isClosed)
    }

    @Test func headerTooLargeIsRejected() {
        var m = machine { $0.limits.maxHeaderBytes = 256 }
        let head = "GET / HTTP/1.1\r\nHost: h\r\n" + String(repeating: "X-A: b\r\n", count: 40)
        #expect(m.receive(head, at: 1) == .reject(.headersTooLarge))
    }

    // MARK: - Timeouts

    @Test func headerTimeoutCountsFromTheFirstByte() {
        var m = machine(now: 0)
        #expect(m.deadline == 75 * second)  // idle until a byte arrives
        #expect(m.receive("GET / HT", at: 3 * second) == .none)
        #expect(m.receive("TP/1.1\r\n", at: 9 * second) == .none)
        #expect(m.deadline == 13 * second)
        #expect(m.timeout(now: 13 * second - 1) == .none)
        let action = m.timeout(now: 13 * second)
        #expect(action == .reject(.headerTimeout))
        if case .reject(let error) = action {
            #expect(error.code == .headerTimeout)
            #expect(error.status.code == 408)
        }
        let response = written(m.respond(Problem(.headerTimeout).response(), date: epoch, now: 13 * second))
        #expect(response?.text.hasPrefix("HTTP/1.1 408 Request Timeout\r\n") == true)
        #expect(response?.close == true)
    }

    @Test func headerTimeoutOfPipelinedPartialHeadCountsFromEndOfPreviousResponse() {
        var m = machine()
        _ = m.receive(get("/1") + "GET /2 HTTP/1.1\r\n", at: 1 * second)
        _ = m.respond(at: 2 * second)
        #expect(m.writeCompleted(now: 3 * second) == .none)
        #expect(m.deadline == 13 * second)
    }

    @Test func idleKeepAliveTimeoutClosesWithoutResponse() {
        var m = machine()
        _ = m.receive(get("/"), at: 1 * second)
        _ = m.respond(at: 1 * second)
        _ = m.writeCompleted(now: 2 * second)
        #expect(m.timeout(now: 77 * second - 1) == .none)
        #expect(m.timeout(now: 77 * second) == .close)
        #expect(m.isClosed)
    }

    @Test func freshConnectionWithoutBytesTimesOutIdle() {
        var m = machine(now: 10 * second)
        #expect(m.timeout(now: 85 * second) == .close)
    }

    @Test func slowBodyIsRejectedWith408() {
        var m = machine()
        // Grace 5 s, then 1000 bytes per second.
        #expect(m.receive("POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 10000\r\n\r\n", at: 1 * second) == .none)
        #expect(m.deadline == 6 * second)
        #expect(m.receive([UInt8](repeating: 0x61, count: 2000), at: 2 * second) == .none)
        #expect(m.deadline == 8 * second)
        #expect(m.timeout(now: 8 * second - 1) == .none)
        let action = m.timeout(now: 8 * second)
        #expect(action == .reject(.bodyTimeout))
        if case .reject(let error) = action { #expect(error.status.code == 408) }
        #expect(written(m.respond(Problem(.bodyTimeout).response(), date: epoch, now: 8 * second))?.close == true)
    }

    @Test func writeTimeoutClosesAndProgressMovesIt() {
        var m = machine()
        _ = m.receive(get("/"), at: 0)
        _ = m.respond(at: 1 * second)
        #expect(m.deadline == 61 * second)
        m.writeProgressed(now: 30 * second)
        #expect(m.deadline == 90 * second)
        #expect(m.timeout(now: 61 * second) == .none)
        #expect(m.timeout(now: 90 * second) == .close)
    }

    @Test func timeoutWhileHandlerRunsDoesNothing() {
        var m = machine()
        _ = m.receive(get("/"), at: 0)
        #expect(m.timeout(now: 1_000 * second) == .none)
        #expect(written(m.respond(at: 1_000 * second)) != nil)
    }

    // MARK: - Closing

    @Test func peerEOFWhileIdleCloses() {
        var m = machine()
        #expect(m.peerClosed() == .close)
        #expect(m.isClosed)
    }

    @Test func peerEOFWithPartialHeadCloses() {
        var m = machine()
        _ = m.receive("GET / HTTP/1.1\r\n", at: 1)
        #expect(m.peerClosed() == .close)
    }

    @Test func peerEOFWhileResponsePendingStillWritesResponseWithClose() {
        var m = machine()
        _ = m.receive(get("/"), at: 1)
        #expect(m.peerClosed() == .none)
        #expect(!m.wantsRead)
        let response = written(m.respond(at: 2))
        #expect(response?.close == true)
        #expect(response?.text.contains("Connection: close\r\n") == true)
        // The peer already sent its FIN: nothing to linger for.
        #expect(m.writeCompleted(now: 3) == .close)
        #expect(m.isClosed)
    }

    @Test func peerEOFWhileWritingClosesAfterTheWrite() {
        var m = machine()
        _ = m.receive(get("/"), at: 1)
        #expect(written(m.respond(at: 2))?.close == false)
        #expect(m.peerClosed() == .none)
        #expect(m.writeCompleted(now: 3) == .close)
    }

    @Test func http10WithoutKeepAliveClosesAfterResponse() {
        var m = machine()
        _ = m.receive("GET / HTTP/1.0\r\n\r\n", at: 1)
        let response = written(m.respond(at: 2))
        #expect(response?.close == true)
        #expect(response?.text.contains("Connection: close\r\n") == true)
        #expect(m.writeCompleted(now: 3) == .closeWrite)
    }

    @Test func anEventStreamIsChunkedForHTTP11AndEndsTheConnectionForHTTP10() {
        var m = machine()
        _ = m.receive(get("/events"), at: 1)
        var events = Response(status: .ok)
        events.file = StubEvents()
        guard case .write(let bytes, let file?, false) = m.respond(events, date: epoch, now: 2) else {
            Issue.record("expected a keep-alive .write with the stream")
            return
        }
        let head = String(decoding: bytes, as: UTF8.self)
        #expect(head.contains("Transfer-Encoding: chunked\r\n") && !head.contains("Content-Length"))
        #expect(file is StubEvents && m.bodyIsChunked)

        var old = machine()
        _ = old.receive("GET /events HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", at: 1)
        guard case .write(let oldBytes, _?, true) = old.respond(events, date: epoch, now: 2) else {
            Issue.record("expected a closing .write with the stream")
            return
        }
        let oldHead = String(decoding: oldBytes, as: UTF8.self)
        #expect(!oldHead.contains("Transfer-Encoding") && !oldHead.contains("Content-Length") && oldHead.contains("Connection: close\r\n"))
        #expect(!old.bodyIsChunked)
    }

    @Test func http10WithKeepAliveStaysOpen() {
        var m = machine()
        _ = m.receive("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", at: 1)
        let response = written(m.respond(at: 2))
        #expect(response?.close == false)
        #expect(response?.text.contains("Connection: keep-alive\r\n") == true)
        #expect(m.writeCompleted(now: 3) == .none)
        #expect(!m.isClosed)
    }

    @Test func connectionCloseFromClientIsHonoured() {
        var m = machine()
        _ = m.receive(get("/", "Connection: close\r\n") + get("/never"), at: 1)
        let response = written(m.respond(at: 2))
        #expect(response?.close == true)
        #expect(response?.text.contains("Connection: close\r\n") == true)
        // The pipelined request after `Connection: close` is never dispatched.
        #expect(m.writeCompleted(now: 3) == .closeWrite)
        #expect(m.receive(get("/late"), at: 4) == .none)
    }

    // MARK: - Draining

    @Test func drainingClosesIdleConnection() {
        var m = machine()
        #expect(m.beginDraining() == .close)
        #expect(m.isClosed)
    }

    @Test func drainingClosesConnectionWithPartialHead() {
        var m = machine()
        _ = m.receive("GET / HTTP/1.1\r\n", at: 1)
        #expect(m.beginDraining() == .close)
    }

    @Test func drainingLetsInFlightRequestFinishWithClose() {
        var m = machine()
        _ = m.receive(get("/"), at: 1)
        #expect(m.beginDraining() == .none)
        let response = written(m.respond(at: 2))
        #expect(response?.close == true)
        #expect(response?.text.contains("Connection: close\r\n") == true)
        #expect(m.writeCompleted(now: 3) == .closeWrite)
    }

    @Test func drainingLetsBodyArriveThenAnswersWithClose() {
        var m = machine()
        _ = m.receive("POST /up HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n", at: 1)
        #expect(m.beginDraining() == .none)
        #expect(dispatched(m.receive("hi", at: 2))?.body == Array("hi".utf8))
        #expect(written(m.respond(at: 3))?.close == true)
    }

    @Test func drainingWhileKeepAliveResponseIsWrittenClosesAfterIt() {
        var m = machine()
        _ = m.receive(get("/"), at: 1)
        #expect(written(m.respond(at: 2))?.close == false)
        #expect(m.beginDraining() == .none)
        // The response was already serialised for keep-alive; once it is out the connection is idle
        // and must not wait for another request during a shutdown.
        #expect(m.writeCompleted(now: 3) == .close)
        #expect(m.isClosed)
    }

    @Test func drainingAnswersPipelinedRequestWithClose() {
        var m = machine()
        _ = m.receive(get("/1") + get("/2"), at: 1)
        _ = m.respond(at: 2)
        #expect(m.beginDraining() == .none)
        #expect(dispatched(m.writeCompleted(now: 3))?.path == "/2")
        #expect(written(m.respond(at: 4))?.close == true)
    }

    // MARK: - Back-pressure

    @Test func wantsReadStopsWhenResponsePendingAndBufferFull() {
        var m = machine { $0.limits.maxHeaderBytes = 1024 }
        _ = m.receive(get("/"), at: 1)
        #expect(m.wantsRead)
        _ = m.receive([UInt8](repeating: 0x41, count: 1023), at: 2)
        #expect(m.wantsRead)
        _ = m.receive([0x41], at: 3)
        #expect(!m.wantsRead)
        _ = m.respond(at: 4)
        #expect(!m.wantsRead)  // still writing, still full
    }
}

/// Admission: a route that must check a request's head before a large body is read.
@Suite(.testThreads) struct ConnectionAdmissionTests {
    private func admitting(threshold: Int = 100) -> ConnectionStateMachine {
        ConnectionStateMachine(
            configuration: configuration { $0.admissionThreshold = threshold }, now: 0,
            bodyLimit: { _ in 1 << 20 }, needsAdmission: { $0.path == "/upload" })
    }

    @Test func aLargeBodyWaitsUnreadUntilTheHeadIsAdmitted() {
        var m = admitting()
        let body = String(repeating: "x", count: 150)
        let head = "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 150\r\n\r\n"
        // The head and the body's first bytes arrive together: the body is kept, not read.
        guard case .admit(let admitted) = m.receive(head + body.prefix(40), at: 0) else {
            Issue.record("expected .admit")
            return
        }
        #expect(admitted.path == "/upload")
        #expect(!m.wantsRead, "nothing is read while the shell decides")
        #expect(m.deadline == nil)
        #expect(m.receive(String(body.dropFirst(40).prefix(10)), at: 1) == .none)
        // Admitted: what is buffered is read, the rest follows.
        #expect(m.admitted(now: 2) == .none)
        #expect(m.wantsRead)
        let request = dispatched(m.receive(String(body.dropFirst(50)), at: 3))
        #expect(request?.body == Array(body.utf8))
    }

    @Test func aRefusedHeadIsAnsweredAndTheConnectionClosesWithTheBodyUnread() {
        var m = admitting()
        guard case .admit = m.receive("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 500000\r\n\r\nxxxx", at: 0) else {
            Issue.record("expected .admit")
            return
        }
        m.refused()
        let answer = written(m.respond("no", status: .unauthorized, at: 1))
        #expect(answer?.text.hasPrefix("HTTP/1.1 401") == true)
        #expect(answer?.close == true)
    }

    @Test func smallBodiesAndOtherRoutesAreNotHeldBack() {
        var m = admitting()
        #expect(dispatched(m.receive("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc", at: 0))?.body == Array("abc".utf8))
        #expect(written(m.respond(at: 1))?.close == false)
        #expect(m.writeCompleted(now: 1) == .none)
        #expect(
            dispatched(m.receive("POST /other HTTP/1.1\r\nHost: h\r\nContent-Length: 150\r\n\r\n" + String(repeating: "y", count: 150), at: 2)) != nil
        )
        #expect(written(m.respond(at: 3))?.close == false)
        #expect(m.writeCompleted(now: 3) == .none)
        // A chunked body may be of any size: checked first.
        guard case .admit = m.receive("POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", at: 4) else {
            Issue.record("expected .admit for a chunked body")
            return
        }
        #expect(m.admitted(now: 5) == .none)
        #expect(dispatched(m.receive("3\r\nabc\r\n0\r\n\r\n", at: 6))?.body == Array("abc".utf8))
    }

    @Test func expectContinueIsAnsweredOnceAdmitted() {
        var m = admitting()
        guard case .admit = m.receive("PUT /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 500\r\nExpect: 100-continue\r\n\r\n", at: 0) else {
            Issue.record("expected .admit")
            return
        }
        #expect(m.admitted(now: 1) == .sendContinue)
    }
}

/// Bodies that stall, and requests that take too long in all.
@Suite(.testThreads) struct BodyDeadlineTests {
    private func slowBodies(bodyLimit: Int = 1 << 20) -> ConnectionStateMachine {
        ConnectionStateMachine(
            configuration: configuration { server in
                server.bodyTimeoutGrace = .seconds(100)  // out of the way: the rate rule is tested elsewhere
                server.bodyStallTimeout = .seconds(10)
                server.requestTimeout = .seconds(20)
                server.uploadTimeout = .seconds(40)
            }, now: 0, bodyLimit: { _ in bodyLimit })
    }

    private func isTimeout(_ action: ConnectionStateMachine.Action) -> Bool {
        if case .reject(let error) = action { return error.status == .requestTimeout }
        return false
    }

    @Test func aBodyThatStopsComingIsCutAfterTenSeconds() {
        var m = slowBodies()
        #expect(m.receive("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n0123456789", at: 0) == .none)
        #expect(m.receive("0123456789", at: 5 * second) == .none)
        #expect(m.deadline == 15 * second, "ten seconds after the last bytes")
        #expect(m.timeout(now: 15 * second - 1) == .none)
        #expect(isTimeout(m.timeout(now: 15 * second)))
    }

    @Test func aRequestThatDribblesIsCutAtItsAbsoluteDeadline() {
        var m = slowBodies()
        #expect(m.receive("POST /x HTTP/1.1\r\n", at: 0) == .none)
        #expect(m.receive("Host: h\r\nContent-Length: 100\r\n\r\n", at: 4 * second) == .none)
        var now: UInt64 = 4 * second
        while now < 20 * second {
            #expect(m.receive("x", at: now) == .none)
            now += 5 * second
        }
        // Never silent for ten seconds, but 20 s after its first byte the request is cut.
        #expect(m.deadline == 20 * second)
        #expect(isTimeout(m.timeout(now: 20 * second)))
    }

    @Test func anUploadRouteHasTheLongerDeadline() {
        var m = slowBodies(bodyLimit: 10 << 20)
        #expect(m.receive("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 2000000\r\n\r\n", at: 0) == .none)
        var now: UInt64 = 0
        while now < 35 * second {
            #expect(m.receive("x", at: now) == .none)
            now += 5 * second
        }
        #expect(m.deadline == 40 * second)
    }
}
