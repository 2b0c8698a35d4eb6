import Outbound
import TestSupport
import Testing

/// The HTTP/1.1 answers a provider's server may give, read from bytes as they arrive, split at
/// every possible point: by length, by chunks, to the close; and what is refused.
@Suite(.testThreads) struct ResponseReaderTests {
    /// Reads `bytes` fed in two parts split at `cut`, then the close; the response or the error.
    static func read(_ text: String, cut: Int? = nil, maximumBytes: Int = 1 << 20) -> Result<HTTPGet.Response, OutboundError> {
        let bytes = Array(text.utf8)
        let cut = cut ?? bytes.count
        var reader = ResponseReader(maximumBytes: maximumBytes)
        do throws(OutboundError) {
            if let response = try reader.take(Array(bytes[..<cut]), closed: false) { return .success(response) }
            if let response = try reader.take(Array(bytes[cut...]), closed: false) { return .success(response) }
            if let response = try reader.take([], closed: true) { return .success(response) }
            return .failure(OutboundError(.protocolError, "nothing after the close"))
        } catch {
            return .failure(error)
        }
    }

    @Test func aBodyByLengthByChunksAndToTheCloseAtEveryCut() throws {
        let body = #"{"keys": []}"#
        let answers = [
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nCache-Control: max-age=60\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nCache-Control: max-age=60\r\n\r\n5;ext=1\r\n{\"key\r\n7\r\ns\": []}\r\n0\r\nTrailer: x\r\n\r\n",
            "HTTP/1.0 200 OK\r\nCache-Control: max-age=60\r\n\r\n\(body)",
        ]
        for answer in answers {
            for cut in 0...answer.utf8.count {
                let response = try Self.read(answer, cut: cut).get()
                #expect(response.status == 200)
                #expect(String(decoding: response.body, as: UTF8.self) == body, "cut \(cut) of \(answer.debugDescription)")
                #expect(response.header("cache-control") == "max-age=60")
            }
        }
    }

    /// A success with a `Content-Length` hands over its head and the body's first bytes once the
    /// head is in; an error's answer, a chunked body or a head cut short do not.
    @Test func aStartedBodyIsHandedOverAfterItsHead() throws {
        let head = "HTTP/1.1 200 OK\r\nETag: \"abc\"\r\nContent-Length: 10\r\n\r\n"
        var reader = ResponseReader(maximumBytes: 1 << 20, streamed: true)
        #expect(try reader.take(Array(head.utf8.dropLast(2)), closed: false) == nil)
        let early = reader.takeStartedBody()
        #expect(early == nil, "the head is not whole yet")
        #expect(try reader.take(Array("\r\n0123".utf8), closed: false) == nil)
        let taken = reader.takeStartedBody()
        let started = try #require(taken)
        #expect(started.status == 200)
        #expect(started.length == 10)
        #expect(started.bytes == Array("0123".utf8))
        #expect(started.headers.first { $0.name == "etag" }?.value == "\"abc\"")

        for answer in [
            "HTTP/1.1 404 Not Found\r\nContent-Length: 50\r\n\r\n<Error>",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n",
        ] {
            var other = ResponseReader(maximumBytes: 1 << 20, streamed: true)
            #expect(try other.take(Array(answer.utf8), closed: false) == nil)
            let none = other.takeStartedBody()
            #expect(none == nil, "\(answer.debugDescription)")
        }
    }

    @Test func whatIsRefused() {
        let refused = [
            ("not HTTP", "SSH-2.0-OpenSSH\r\n\r\n"),
            ("a bad status", "HTTP/1.1 2000 OK\r\n\r\n"),
            ("a field without a name", "HTTP/1.1 200 OK\r\n: x\r\n\r\n"),
            ("a bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"),
            ("a short body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"),
            ("a bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"),
            ("a chunk without its CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n"),
            ("a cut chunked body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab"),
            ("gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"),
            ("a cut head", "HTTP/1.1 200 OK\r\nContent-Le"),
            ("too large by length", "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n"),
            ("too large to the close", "HTTP/1.1 200 OK\r\n\r\n" + String(repeating: "x", count: 1_025)),
        ]
        for (what, answer) in refused {
            guard case .failure(let error) = Self.read(answer, maximumBytes: 1_024) else {
                Issue.record("\(what) was accepted")
                continue
            }
            #expect(error.code == .protocolError, "\(what): \(error)")
        }
    }

    /// The answer to a HEAD, a 204 and a 304 end with their head, whatever Content-Length says.
    @Test func answersWithoutABody() throws {
        var head = ResponseReader(maximumBytes: 100, head: true)
        let headAnswer = try head.take(Array("HTTP/1.1 200 OK\r\nContent-Length: 2097152\r\nETag: \"x\"\r\n\r\n".utf8), closed: false)
        #expect(headAnswer?.status == 200)
        #expect(headAnswer?.body == [])
        for status in ["204 No Content", "304 Not Modified"] {
            var reader = ResponseReader(maximumBytes: 100)
            let answer = try reader.take(Array("HTTP/1.1 \(status)\r\nContent-Length: 10\r\n\r\n".utf8), closed: false)
            #expect(answer?.body == [], "\(status)")
        }
    }

    @Test func targets() {
        #expect(HTTPGet.Target("https://appleid.apple.com/auth/keys") == target(true, "appleid.apple.com", 443, "/auth/keys"))
        #expect(HTTPGet.Target("http://127.0.0.1:8080") == target(false, "127.0.0.1", 8080, "/"))
        #expect(HTTPGet.Target("https://[::1]:9/k?x=1") == target(true, "::1", 9, "/k?x=1"))
        #expect(HTTPGet.Target("http://localhost?x")?.path == "/?x")
        for bad in ["ftp://x/", "https://", "https://user@host/", "https://host:0/", "https://host:70000/", "https://h/#f", "https://h /", "keys"] {
            #expect(HTTPGet.Target(bad) == nil, "\(bad)")
        }
        #expect(HTTPGet.Target("http://127.0.0.2/")?.isLoopback == true)
        #expect(HTTPGet.Target("http://[::1]/")?.isLoopback == true)
        #expect(HTTPGet.Target("http://example.com/")?.isLoopback == false)
        #expect(HTTPGet.Target("http://127.example.com/")?.isLoopback == false)
    }

    private func target(_ secure: Bool, _ host: String, _ port: Int, _ path: String) -> HTTPGet.Target? {
        var target = HTTPGet.Target("http://placeholder/")
        target?.isSecure = secure
        target?.host = host
        target?.port = port
        target?.path = path
        return target
    }
}
