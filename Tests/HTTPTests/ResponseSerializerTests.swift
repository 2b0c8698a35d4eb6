import HTTP
import TestSupport
import Testing

@Suite(.testThreads) struct ResponseSerializerTests {
    let date = HTTPDate.format(secondsSinceEpoch: 784_111_777)

    func serialize(
        _ response: Response, method: HTTPMethod = .get, keepAlive: Bool = true,
        version: HTTPVersion = .http1_1
    ) -> String {
        var buffer: [UInt8] = []
        ResponseSerializer.serialize(response, requestMethod: method, keepAlive: keepAlive, date: date, version: version, into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }

    @Test func okWithBody() {
        let response = Response(status: .ok, contentType: "text/plain", body: Array("hello".utf8))
        #expect(
            serialize(response) == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                + "Content-Type: text/plain\r\n\r\nhello")
    }

    @Test func emptyBodyHasContentLengthZero() {
        #expect(
            serialize(Response(status: .notFound)) == "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                + "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n")
    }

    @Test(arguments: [(1, "1"), (9, "9"), (10, "10"), (99, "99"), (100, "100"), (12_345, "12345"), (1_048_576, "1048576")])
    func contentLengthDigits(length: Int, text: String) {
        let output = serialize(Response(status: .ok, body: [UInt8](repeating: 0x61, count: length)))
        #expect(output.hasPrefix("HTTP/1.1 200 OK\r\nContent-Length: \(text)\r\n"))
        #expect(output.utf8.count == "HTTP/1.1 200 OK\r\nContent-Length: \(text)\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n".utf8.count + length)
    }

    @Test func headHasContentLengthButNoBody() {
        let response = Response(status: .ok, contentType: "text/plain", body: Array("hello".utf8))
        #expect(
            serialize(response, method: .head) == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                + "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nContent-Type: text/plain\r\n\r\n")
    }

    @Test func noContentHasNeitherLengthNorBody() {
        let response = Response(status: .noContent, body: Array("ignored".utf8))
        #expect(serialize(response) == "HTTP/1.1 204 No Content\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n")
    }

    @Test func notModifiedHasNeitherLengthNorBody() {
        var headers = HTTPHeaders()
        headers.add(name: "ETag", value: "\"v1\"")
        let response = Response(status: .notModified, headers: headers, body: Array("ignored".utf8))
        #expect(serialize(response) == "HTTP/1.1 304 Not Modified\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nETag: \"v1\"\r\n\r\n")
    }

    @Test func closeWhenNotKeepingAlive() {
        #expect(
            serialize(Response(status: .ok), keepAlive: false) == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                + "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nConnection: close\r\n\r\n")
    }

    @Test func http10KeepAlive() {
        #expect(
            serialize(Response(status: .ok), version: .http1_0) == "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n"
                + "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\nConnection: keep-alive\r\n\r\n")
        #expect(
            serialize(Response(status: .ok), keepAlive: false, version: .http1_0) == "HTTP/1.1 200 OK\r\n"
                + "Content-Length: 0\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\nConnection: close\r\n\r\n")
    }

    @Test func framingFieldsFromTheHandlerAreDropped() {
        let headers = HTTPHeaders([
            ("X-Before", "1"), ("Content-Length", "999"), ("transfer-encoding", "chunked"), ("CONNECTION", "upgrade"),
            ("Date", "yesterday"), ("X-After", "2"), ("Content-Type", "application/json"),
        ])
        let response = Response(status: .created, headers: headers, body: Array("{}".utf8))
        #expect(
            serialize(response) == "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                + "X-Before: 1\r\nX-After: 2\r\nContent-Type: application/json\r\n\r\n{}")
    }

    @Test func appendsToTheBuffer() {
        var buffer = Array("previous".utf8)
        ResponseSerializer.serialize(Response(status: .ok, body: [0x41]), requestMethod: .get, keepAlive: true, date: date, into: &buffer)
        #expect(
            String(decoding: buffer, as: UTF8.self) == "previousHTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
                + "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\nA")
    }

    @Test func continueResponse() {
        #expect(ResponseSerializer.continueResponse == Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
    }

    @Test func serializedResponseIsReadBackWithTheRightLength() {
        // A 200 to HEAD announces the length of the GET body; nothing of it may follow.
        let body = Array("0123456789".utf8)
        let get = serialize(Response(status: .ok, body: body))
        let head = serialize(Response(status: .ok, body: body), method: .head)
        #expect(get.utf8.count == head.utf8.count + body.count)
    }

    // MARK: - File bodies

    @Test func fileBodyAnnouncesItsLengthAndIsNotAppended() {
        let response = Response(status: .ok, contentType: "image/png", file: StubFile(offset: 1000, length: 5000))
        #expect(
            serialize(response) == "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
                + "Content-Type: image/png\r\n\r\n")
        #expect(serialize(response, method: .head) == serialize(response))
    }

    @Test func fileBodyFollowsOnlyWhenABodyIsAllowed() {
        #expect(ResponseSerializer.sendsBody(status: .ok, requestMethod: .get))
        #expect(!ResponseSerializer.sendsBody(status: .ok, requestMethod: .head))
        #expect(!ResponseSerializer.sendsBody(status: .noContent, requestMethod: .get))
        #expect(!ResponseSerializer.sendsBody(status: .notModified, requestMethod: .get))
        var response = Response(status: .notModified)
        response.file = StubFile(offset: 0, length: 7)
        #expect(serialize(response) == "HTTP/1.1 304 Not Modified\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n")
    }

    @Test func theBodyLastSetWins() {
        var response = Response(status: .ok, body: Array("bytes".utf8))
        response.file = StubFile(offset: 0, length: 3)
        #expect(response.body.isEmpty)
        #expect(response.bodyLength == 3)
        response.body = Array("again".utf8)
        #expect(response.file == nil)
        #expect(response.bodyLength == 5)
        #expect(serialize(response).hasSuffix("\r\n\r\nagain"))
    }
}

/// A file body that is never opened: the serializer only reads its length.
private final class StubFile: ResponseFile {
    let descriptor: Int32 = -1
    let offset: Int
    let length: Int
    init(offset: Int, length: Int) {
        self.offset = offset
        self.length = length
    }
}
