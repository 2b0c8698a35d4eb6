import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Glibc
import HTTP
@testable import HTTPServer
import TestSupport
import Testing

/// The server on a real socket: 127.0.0.1, an ephemeral port, a raw client that controls every byte.
///
/// Serialized: several tests measure latency or CPU time, and the machine has two cores.
@Suite(.testThreads, .serialized) struct HTTPServerTests {
    // MARK: - Connections

    @Test func keepAliveServesTwoRequestsOnOneConnection() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let first = try client.request("GET", "/hello")
        #expect(first.status == 200)
        #expect(first.text == "hello")
        #expect(first["Content-Type"] == "text/plain")
        #expect(first["Date"]?.hasSuffix(" GMT") == true)
        #expect(!first.closes)
        let second = try client.request("GET", "/healthz")
        #expect(second.status == 200)
        #expect(second.text == #"{"status":"ok"}"#)
        #expect(server.metrics.connectionsAccepted == 1)
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        // A blocking one in the middle: the third must still wait for it.
        try client.send(
            "GET /items/1 HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /items/3 HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try client.readResponse().text == "1")
        #expect(try client.readResponse().text == "slow")
        #expect(try client.readResponse().text == "3")
        #expect(try client.request("GET", "/items/4").text == "4")
    }

    @Test func manyPipelinedRequestsWithBackPressure() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        // About 120 KiB of requests: more than one read and more than the buffer kept while responding.
        let count = 3000
        let requests = (0..<count).map { "GET /items/\($0) HTTP/1.1\r\nHost: t\r\n\r\n" }.joined()
        let fd = client.fd
        let sender = Background { () -> Bool in
            var bytes = Array(requests.utf8)[...]
            while !bytes.isEmpty {
                let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard n > 0 else { return false }
                bytes = bytes.dropFirst(n)
            }
            return true
        }
        var inOrder = 0
        for index in 0..<count {
            guard let response = try? client.readResponse(), response.text == String(index) else { break }
            inOrder += 1
        }
        #expect(inOrder == count)
        #expect(sender.wait() == true)
    }

    @Test func largeBodiesBothWays() throws {
        let big = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let server = try startServer(
            router: testRouter { router in
                router.get("/big") { _, _ in Response(status: .ok, contentType: "application/octet-stream", body: big) }
            }
        ) { $0.limits.maxBodyBytes = 1 << 20 }
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        // A response far larger than the socket buffer: written in parts as the client reads.
        let response = try client.request("GET", "/big")
        #expect(response.body.count == big.count)
        #expect(response.body == big)
        // A request body larger than one 64 KiB read.
        let upload = String(repeating: "0123456789abcdef", count: 40_000)
        #expect(try client.request("POST", "/echo", body: upload).text == upload)
        #expect(try client.request("GET", "/hello").text == "hello")
    }

    @Test func http10AndAbsoluteForm() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let keepAlive = try RawClient(port: server.port)
        try keepAlive.send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let first = try keepAlive.readResponse()
        #expect(first.text == "hello")
        #expect(first["Connection"]?.lowercased() == "keep-alive")
        try keepAlive.send("GET http://example.com/items/7?x=1 HTTP/1.0\r\n\r\n")
        let second = try keepAlive.readResponse()
        #expect(second.text == "7")
        #expect(second.closes)
        #expect(keepAlive.readsEOF())
    }

    @Test func metricsRecordRoutePatterns() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        _ = try client.request("GET", "/items/1")
        _ = try client.request("GET", "/items/2")
        _ = try client.request("GET", "/missing")
        _ = try client.request("GET", "/boom")
        // The access log and metrics are written when the response is out; the client may see it first.
        var snapshot = server.metrics.snapshot
        for _ in 0..<100 where snapshot.values.reduce(0, { $0 + $1.count }) < 4 {
            usleep(10_000)
            snapshot = server.metrics.snapshot
        }
        #expect(snapshot[HTTPMetrics.Series(route: "/items/{id}", method: "GET", status: 200)]?.count == 2)
        #expect(snapshot[HTTPMetrics.Series(route: "-", method: "GET", status: 404)]?.count == 1)
        #expect(snapshot[HTTPMetrics.Series(route: "/boom", method: "GET", status: 500)]?.count == 1)
        #expect(server.metrics.requestsInFlight == 0)
        #expect(server.metrics.connectionsOpen == 1)
    }

    @Test func headRequestGetsHeadersWithoutBody() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let head = try client.request("HEAD", "/hello")
        #expect(head.status == 200)
        #expect(head["Content-Length"] == "5")
        #expect(head.body.isEmpty)
        // Had a body been sent, this response would be read as garbage.
        #expect(try client.request("GET", "/hello").text == "hello")
    }

    @Test func expectContinue() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let interim = try client.readResponse()
        #expect(interim.status == 100)
        try client.send("hello")
        let final = try client.readResponse()
        #expect(final.status == 200)
        #expect(final.text == "hello")
        #expect(!final.closes)
    }

    @Test func chunkedBodyIsDecoded() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1\r\n!\r\n0\r\n\r\n")
        #expect(try client.readResponse().text == "hello!")
    }

    // MARK: - Limits

    @Test func contentLengthOverLimitIs413BeforeTheBodyIsSent() throws {
        let server = try startServer { $0.limits.maxBodyBytes = 1024 }
        defer { server.shutdown() }
        let client = try RawClient(port: server.port, timeout: 2)
        try client.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n")
        let response = try client.readResponse()
        #expect(response.status == 413)
        #expect(response.closes)
        #expect(response["Content-Type"] == "application/problem+json")
        #expect(response.text.contains(#""code":"body_too_large""#))
        #expect(client.readsEOF())
    }

    @Test func routeBodyLimitOverridesTheServerDefault() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        #expect(try client.request("POST", "/small", body: "abcd").text == "abcd")
        let response = try client.request("POST", "/small", body: "abcde")
        #expect(response.status == 413)
        #expect(response.closes)
    }

    @Test func hugeHeaderSectionIs431() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let headers = (0..<8).map { "X-Filler-\($0): \(String(repeating: "a", count: 5000))" }
        let response = try client.request("GET", "/hello", headers: headers)
        #expect(response.status == 431)
        #expect(response.closes)
        #expect(response.text.contains(#""code":"headers_too_large""#))
    }

    @Test func hugeHeaderFieldIs431() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let response = try client.request("GET", "/hello", headers: ["X-Big: " + String(repeating: "b", count: 9000)])
        #expect(response.status == 431)
        #expect(response.text.contains(#""code":"header_field_too_large""#))
    }

    @Test func hugeRequestLineIs414() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let response = try client.request("GET", "/hello?q=" + String(repeating: "x", count: 9000))
        #expect(response.status == 414)
        #expect(response.closes)
        #expect(response.text.contains(#""code":"request_line_too_long""#))
    }

    // MARK: - Concurrency and timeouts

    @Test func blockingHandlerDoesNotDelayInlineHandler() throws {
        // The blocking handler holds its worker until the test lets it go, and the test lets it go
        // only once the inline /healthz has been answered: an inline handler that waited behind
        // the blocking one would never be answered (the client's read gives up after 5 s).
        let started = Gate()
        let release = Gate()
        let server = try startServer(
            router: testRouter { router in
                router.get("/held") { _, _ in
                    started.open()
                    release.wait(timeout: 30)
                    return Response(status: .ok, contentType: "text/plain", body: Array("held".utf8))
                }
            })
        defer { server.shutdown() }
        defer { release.open() }  // before the shutdown (defers run last first), also when a check throws
        let slowClient = try RawClient(port: server.port)
        let fastClient = try RawClient(port: server.port)
        try slowClient.send("GET /held HTTP/1.1\r\nHost: t\r\n\r\n")
        try #require(started.wait(), "the blocking handler did not start")
        let health = try fastClient.request("GET", "/healthz")
        #expect(health.status == 200)
        // Answered while the blocking handler still held its request: nothing of that answer yet.
        var pending = pollfd(fd: slowClient.fd, events: Int16(POLLIN), revents: 0)
        #expect(slowClient.bufferedCount == 0 && poll(&pending, 1, 0) == 0, "/held was answered before the test let it go")
        release.open()
        #expect(try slowClient.readResponse().text == "held")
    }

    @Test func slowlorisIsCutOffWhileFastClientIsServed() throws {
        // Two seconds of header timeout: room for the fast client's five requests to be answered
        // before the slow client is cut, even on a loaded machine.
        let server = try startServer { $0.headerTimeout = .seconds(2) }
        defer { server.shutdown() }
        let port = server.port
        let dripping = Gate()
        let cut = Gate()
        let slow = Background { () -> (status: Int, code: Bool, seconds: Double)? in
            // Opened however the drip ends (an answer, a failed send, every byte sent).
            defer { cut.open() }
            guard let client = try? RawClient(port: port, timeout: 5) else { return nil }
            let bytes = Array("GET /hello HTTP/1.1\r\nHost: t\r\nX-Drip: \(String(repeating: "d", count: 100))\r\n\r\n".utf8)
            let start = DispatchTime.now()
            var pollFD = pollfd(fd: client.fd, events: Int16(POLLIN), revents: 0)
            for (index, byte) in bytes.enumerated() {
                // Stop dripping once the server has answered; a byte every 200 ms is the slow client.
                if poll(&pollFD, 1, 200) > 0 { break }
                guard (try? client.send([byte])) != nil else { break }
                if index == 1 { dripping.open() }
            }
            cut.open()
            guard let response = try? client.readResponse() else { return nil }
            return (response.status, response.text.contains(#""code":"header_timeout""#) && response.closes, elapsed(since: start))
        }
        // The slow client's connection is open and its head half sent before the fast one starts.
        try #require(dripping.wait(timeout: 10), "the slow client did not start dripping")
        try waitUntil(timeout: .seconds(10), "the server to hold the slow connection") { server.openConnections == 1 }
        // Meanwhile another connection is served, several times, each answer before the slow
        // client is cut: a loop that waited on the slow client's head would answer only after.
        let fast = try RawClient(port: server.port)
        for round in 1...5 {
            #expect(try fast.request("GET", "/hello").status == 200)
            #expect(!cut.opened, "request \(round) of the fast client was answered only after the slow client was cut off")
        }
        let result = slow.wait(timeout: 10) ?? nil
        #expect(result?.status == 408)
        #expect(result?.code == true)
        // The deadline is the first byte plus 2 s: the cut comes no earlier (a lower bound, which no
        // slow machine can break). No upper bound but the 10 s wait, which only a server that never
        // cuts the slow client fails: under load the timer may fire late, and that is no fault.
        #expect((result?.seconds ?? 0) >= 1.9)
    }

    @Test func connectionCapAnswers503AndCloses() throws {
        // No timer of the server's can fire while the test runs: a refusal that waited for one
        // (the head, the idle connection) would not reach the third client within its 5 s reads.
        let server = try startServer {
            $0.maxConnections = 2
            $0.headerTimeout = .seconds(60)
            $0.idleTimeout = .seconds(60)
        }
        defer { server.shutdown() }
        let first = try RawClient(port: server.port)
        let second = try RawClient(port: server.port)
        #expect(try first.request("GET", "/hello").status == 200)
        #expect(try second.request("GET", "/hello").status == 200)
        // The third client sends nothing: the answer comes at the accept.
        let third = try RawClient(port: server.port)
        let refused = try third.readResponse()
        #expect(refused.status == 503)
        #expect(refused.closes)
        #expect(refused["Retry-After"] == "1")
        #expect(refused.text.contains(#""code":"overloaded""#))
        #expect(third.readsEOF())
        // The two accepted connections are unaffected.
        #expect(try first.request("GET", "/hello").status == 200)
        #expect(server.openConnections == 2)
    }

    @Test func connectionCapAnswers503EvenWhenTheRequestWasAlreadySent() throws {
        let server = try startServer { $0.maxConnections = 1 }
        defer { server.shutdown() }
        let held = try RawClient(port: server.port)
        #expect(try held.request("GET", "/hello").status == 200)
        // The refused client has sent its request before the server accepts: closing a socket with
        // unread input sends a reset, which must not destroy the 503 on its way.
        var failures: [String] = []
        for _ in 0..<20 {
            let refused = try RawClient(port: server.port)
            try refused.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 2000\r\n\r\n" + String(repeating: "z", count: 2000))
            // Read only once the server is done with the connection (its FIN, or the reset of a
            // close with the request unread), so that the 503 must have survived it.
            var ended = pollfd(fd: refused.fd, events: pollReadHangUp, revents: 0)
            guard poll(&ended, 1, 10_000) == 1, ended.revents & (pollReadHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0 else {
                failures.append("the server did not end the refused connection within 10 s (revents \(ended.revents))")
                continue
            }
            do {
                #expect(try refused.readResponse().status == 503)
            } catch {
                failures.append(String(describing: error))
            }
        }
        #expect(failures.isEmpty, "\(failures.count) of 20 refused clients lost the 503: \(failures.first ?? "")")
    }

    @Test func connectionCapSlotIsReleasedOnClose() throws {
        let server = try startServer { $0.maxConnections = 1 }
        defer { server.shutdown() }
        do {
            let first = try RawClient(port: server.port)
            #expect(try first.request("GET", "/hello").status == 200)
        }
        // The server notices the close within one loop iteration.
        var status = 0
        for _ in 0..<50 {
            let next = try RawClient(port: server.port)
            status = try next.request("GET", "/hello").status
            if status == 200 { break }
            usleep(20_000)
        }
        #expect(status == 200)
    }

    @Test func halfClosedClientGetsResponseWithoutSpinningTheLoop() throws {
        let server = try startServer(
            router: testRouter { router in
                router.get("/sleep") { _, _ in
                    usleep(500_000)
                    return Response(status: .ok, contentType: "text/plain", body: Array("slept".utf8))
                }
            })
        defer { server.shutdown() }
        // Answered by the loop: it runs, and its thread is known.
        #expect(try RawClient(port: server.port).request("GET", "/hello").status == 200)
        let loops = server.loopThreadIDs
        #expect(!loops.contains(0))
        let client = try RawClient(port: server.port)
        try client.send("GET /sleep HTTP/1.1\r\nHost: t\r\n\r\n")
        client.shutdownWrite()
        let before = try cpuSeconds(ofThreads: loops)
        let response = try client.readResponse()
        let used = try cpuSeconds(ofThreads: loops) - before
        #expect(response.status == 200)
        #expect(response.text == "slept")
        #expect(response.closes)
        #expect(client.readsEOF())
        #expect(used < 0.15, "the event loop burned \(used) s of CPU while a half-closed connection waited 0.5 s")
    }

    // MARK: - Handlers and errors

    @Test func unknownErrorBecomes500WithoutItsText() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let response = try client.request("GET", "/boom")
        #expect(response.status == 500)
        #expect(response["Content-Type"] == "application/problem+json")
        #expect(response.text.contains(#""code":"internal_error""#))
        #expect(!response.text.contains("secret"))
        #expect(!response.text.contains("hunter2"))
        #expect(!response.text.contains("SecretError"))
        // A handler failure does not end the connection.
        #expect(!response.closes)
        #expect(try client.request("GET", "/hello").status == 200)
    }

    @Test func thrownProblemSetsStatusAndCode() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let response = try client.request("GET", "/conflict")
        #expect(response.status == 409)
        #expect(response["Content-Type"] == "application/problem+json")
        #expect(response.text == #"{"type":"about:blank","title":"Conflict","status":409,"code":"email_taken","detail":"That email is taken."}"#)
    }

    @Test func routingErrorsOnTheWire() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let missing = try client.request("GET", "/missing")
        #expect(missing.status == 404)
        #expect(missing.text.contains(#""code":"not_found""#))
        let wrongMethod = try client.request("DELETE", "/hello")
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod["Allow"] == "GET, HEAD")
        let unknown = try client.request("BREW", "/hello")
        #expect(unknown.status == 501)
        #expect(try client.request("GET", "/items/caf%C3%A9").text == "café")
        #expect(try client.request("GET", "/items/%FF").status == 404)
        #expect(try client.request("GET", "/hello/").status == 404)
        // None of these ended the connection.
        #expect(try client.request("GET", "/hello").status == 200)
    }

    @Test func requestIDIsEchoedWhenSaneAndGeneratedOtherwise() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let echoed = try client.request("GET", "/id", headers: ["X-Request-Id: abc-123_x.y:z"])
        #expect(echoed["X-Request-Id"] == "abc-123_x.y:z")
        #expect(echoed.text == "abc-123_x.y:z")

        let generated = try client.request("GET", "/id")
        let id = try #require(generated["X-Request-Id"])
        #expect(!id.isEmpty)
        #expect(generated.text == id)
        let another = try client.request("GET", "/id")
        #expect(another["X-Request-Id"] != id)

        for insane in ["has space", "semi;colon", String(repeating: "a", count: 129), "quote\"d", "caf\u{E9}"] {
            let response = try client.request("GET", "/id", headers: ["X-Request-Id: \(insane)"])
            #expect(response["X-Request-Id"] != insane)
            #expect(response["X-Request-Id"]?.isEmpty == false)
            #expect(response.text == response["X-Request-Id"])
        }
        #expect(try client.request("GET", "/id", headers: ["X-Request-Id: " + String(repeating: "a", count: 128)]).text.count == 128)
        // Error responses carry one too.
        #expect(try client.request("GET", "/missing", headers: ["X-Request-Id: r-404"])["X-Request-Id"] == "r-404")
    }

    @Test func requestIDRules() {
        #expect(RequestID.isAcceptable("a"))
        #expect(RequestID.isAcceptable("0123-ABCD_ef.gh:ij"))
        #expect(!RequestID.isAcceptable(""))
        #expect(!RequestID.isAcceptable("a b"))
        #expect(!RequestID.isAcceptable("a\u{0}b"))
        #expect(!RequestID.isAcceptable(String(repeating: "x", count: 129)))
    }

    @Test func badClientDoesNotAffectAnotherClient() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let good = try RawClient(port: server.port)
        let bad = try RawClient(port: server.port)
        #expect(try good.request("GET", "/hello").status == 200)
        try bad.send([0x00, 0xFF, 0x13, 0x37] + Array("garbage \u{1}\r\n\r\n".utf8))
        let rejected = try bad.readResponse()
        #expect(rejected.status == 400)
        #expect(rejected.closes)
        #expect(bad.readsEOF())
        #expect(try good.request("GET", "/hello").text == "hello")
        // And a client that vanishes mid-request does not either.
        do {
            let vanishing = try RawClient(port: server.port)
            try vanishing.send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc")
        }
        #expect(try good.request("GET", "/hello").text == "hello")
    }

    @Test func urlSessionClient() throws {
        let server = try startServer()
        defer { server.shutdown() }
        let base = "http://127.0.0.1:\(server.port)"
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }

        func fetch(_ request: URLRequest) -> (Data?, HTTPURLResponse?, (any Error)?) {
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var result: (Data?, HTTPURLResponse?, (any Error)?) = (nil, nil, nil)
            session.dataTask(with: request) { data, response, error in
                result = (data, response as? HTTPURLResponse, error)
                done.signal()
            }.resume()
            guard done.wait(timeout: .now() + 10) == .success else { return (nil, nil, ClientError("URLSession timed out")) }
            return result
        }

        let (data, response, error) = fetch(URLRequest(url: URL(string: base + "/healthz")!, timeoutInterval: 5))
        #expect(error == nil)
        #expect(response?.statusCode == 200)
        #expect(response?.value(forHTTPHeaderField: "Content-Type") == "application/json")
        #expect(data.map { String(decoding: $0, as: UTF8.self) } == #"{"status":"ok"}"#)

        var post = URLRequest(url: URL(string: base + "/echo")!, timeoutInterval: 5)
        post.httpMethod = "POST"
        post.httpBody = Data("ping".utf8)
        let (echo, echoResponse, echoError) = fetch(post)
        #expect(echoError == nil)
        #expect(echoResponse?.statusCode == 200)
        #expect(echo.map { String(decoding: $0, as: UTF8.self) } == "ping")

        let (_, missing, _) = fetch(URLRequest(url: URL(string: base + "/nope")!, timeoutInterval: 5))
        #expect(missing?.statusCode == 404)
        #expect(missing?.value(forHTTPHeaderField: "Content-Type") == "application/problem+json")
    }

    // MARK: - Shutdown

    @Test func gracefulShutdownFinishesInFlightRequest() throws {
        let started = Gate()
        let release = Gate()
        // A drain timeout far longer than the test: shutdown must return because the last
        // request ended, not because the drain gave up.
        let server = try startServer(
            router: testRouter { router in
                router.get("/work") { _, _ in
                    started.open()
                    release.wait(timeout: 30)
                    return Response(status: .ok, contentType: "text/plain", body: Array("done".utf8))
                }
            }
        ) { $0.drainTimeout = .seconds(60) }
        defer { release.open() }  // a failed check must not leave the handler waiting
        let port = server.port
        let idle = try RawClient(port: port)
        #expect(try idle.request("GET", "/hello").status == 200)
        let busy = try RawClient(port: port)
        try busy.send("GET /work HTTP/1.1\r\nHost: t\r\n\r\n")
        try #require(started.wait(), "the in-flight handler did not start")

        let shutdown = Background { () -> Bool in
            server.shutdown()
            return true
        }
        // The idle keep-alive connection is closed at once, without a response: while the
        // in-flight request is still held (a server that closed it only after draining would
        // leave the read to time out after 5 s).
        #expect(idle.readsEOF())
        release.open()
        // The in-flight request still completes, and says the connection ends.
        let response = try busy.readResponse()
        #expect(response.status == 200)
        #expect(response.text == "done")
        #expect(response.closes)
        #expect(busy.readsEOF())
        #expect(shutdown.wait(timeout: 10) != nil, "shutdown did not return once its last request was answered (drain timeout 60 s)")
        #expect(connectErrno(port: port) == ECONNREFUSED)
    }

    @Test func shutdownOfIdleServerReturnsPromptly() throws {
        // With a drain timeout far longer than the test, returning at all means not draining.
        let server = try startServer {
            $0.eventLoops = 2
            $0.drainTimeout = .seconds(60)
        }
        let port = server.port
        let client = try RawClient(port: port)
        #expect(try client.request("GET", "/hello").status == 200)
        let shutdown = Background { () -> Bool in
            server.shutdown()
            return true
        }
        #expect(shutdown.wait(timeout: 10) != nil, "shutdown of an idle server waited for its drain timeout (60 s)")
        #expect(client.readsEOF())
        #expect(connectErrno(port: port) == ECONNREFUSED)
        server.shutdown()  // a second call is harmless
    }

    /// `POLLRDHUP` (the peer shut down its writing), which Glibc declares only for `_GNU_SOURCE`.
    private let pollReadHangUp: Int16 = 0x2000
}
