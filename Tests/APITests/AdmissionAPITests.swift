import Glibc
import TestSupport
import Testing

/// Routes that need a session check it from the request head before a large body is read.
@Suite(.testThreads, .liveServer("admission"))
struct AdmissionAPITests {
    let server: TestServer
    init() throws { server = try #require(TestServer.current) }

    /// Sends `head` alone on a new connection and reads what comes back within `seconds` (nil for
    /// nothing); the connection stays open for `continuing`.
    func sendHead(_ head: String, seconds: Int, continuing: ((Int32) throws -> Void)? = nil) throws -> String? {
        let fd = try HTTPClient.connect(port: server.port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = head.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        try continuing?(fd)
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
    }

    @Test func anUploadWithoutAValidSessionIsRefusedBeforeItsBodyIsSent() throws {
        for authorization in ["", "Authorization: Bearer \(String(repeating: "A", count: 43))\r\n"] {
            let answer = try sendHead(
                """
                POST /users/me/images HTTP/1.1\r\nHost: h\r\nContent-Type: image/png\r\nContent-Length: 10000000\r\n\(authorization)\r\n
                """, seconds: 10)
            let text = try #require(answer, "no answer to the head alone")
            #expect(text.hasPrefix("HTTP/1.1 401"), "\(text.prefix(80))")
            #expect(text.lowercased().contains("connection: close"))
            #expect(text.contains("WWW-Authenticate"))
        }
    }

    @Test func anUploadWithASessionIsReadAndStored() throws {
        let account = try server.register()
        let image = ImageScenarios.png(size: 100_000)
        let head = """
            POST /users/me/images HTTP/1.1\r\nHost: h\r\nContent-Type: image/png\r\nContent-Length: \(image.count)\r\nAuthorization: Bearer \(account.token)\r\nConnection: close\r\n\r\n
            """
        let answer = try sendHead(head, seconds: 10) { fd in
            _ = image.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        // Nothing was answered while the body had not come: the first bytes that came back are
        // the answer to the whole upload, and the only one (an early answer would come first).
        #expect(answer?.hasPrefix("HTTP/1.1 201") == true, "\(answer?.prefix(120) ?? "nothing")")
        #expect(answer?.components(separatedBy: "HTTP/1.").count == 2, "one answer: \(answer?.prefix(300) ?? "nothing")")
    }

    @Test func largeProfileBodiesNeedASessionFirstToo() throws {
        let answer = try sendHead(
            "PATCH /users/me HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 900000\r\n\r\n",
            seconds: 10)
        #expect(answer?.hasPrefix("HTTP/1.1 401") == true)
    }
}

/// Bodies that stall, and requests that dribble, against the real server.
@Suite(
    .testThreads,
    .liveServer("bodytimeouts") { configuration in
        configuration.server.bodyStallTimeout = .seconds(1)
        configuration.server.requestTimeout = .seconds(3)
    })
struct BodyTimeoutAPITests {
    let server: TestServer
    init() throws { server = try #require(TestServer.current) }

    /// Sends `head`, then one byte of body every `interval` seconds; the answer and when it came.
    func dribble(interval: Double) throws -> (answer: String, seconds: Double) {
        let fd = try HTTPClient.connect(port: server.port)
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        let head = "POST /users/signin HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        _ = head.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        let start = ContinuousClock.now
        var nextByte = start
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now - start < .seconds(10) {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count > 0 {
                let elapsed = ContinuousClock.now - start
                return (
                    String(decoding: buffer[..<count], as: UTF8.self),
                    elapsed.inSeconds
                )
            }
            if interval > 0, ContinuousClock.now >= nextByte {
                _ = send(fd, "{", 1, Int32(MSG_NOSIGNAL))
                nextByte = nextByte + .milliseconds(Int(interval * 1000))
            }
            usleep(20_000)
        }
        return ("", 10)
    }

    @Test func aStalledBodyIsCutWith408() throws {
        let (answer, seconds) = try dribble(interval: 0)
        #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer.prefix(60))")
        #expect(answer.contains("body_timeout"))
        #expect(seconds >= 0.9 && seconds < 5, "\(seconds) s")
    }

    @Test func aBodyThatDribblesIsCutAtTheRequestDeadline() throws {
        let (answer, seconds) = try dribble(interval: 0.3)
        #expect(answer.hasPrefix("HTTP/1.1 408"), "\(answer.prefix(60))")
        #expect(seconds >= 2.5 && seconds < 7, "\(seconds) s")
    }
}

/// The server's caps on connections per client address and on request bodies held at once.
@Suite(
    .testThreads,
    .liveServer("caps") { configuration in
        configuration.server.maxConnectionsPerAddress = 5
        configuration.server.maxBufferedBodyBytes = 2 << 20
    }, .serialized)
struct ServerCapsAPITests {
    let server: TestServer
    init() throws { server = try #require(TestServer.current) }

    @Test func oneAddressGetsItsShareOfConnections() throws {
        var held = try (0..<5).map { _ in try HTTPClient.connect(port: server.port) }
        defer { held.forEach { close($0) } }
        let httpServer = server.app.server
        try waitUntil(timeout: .seconds(10), "the server to accept the 5 connections") { httpServer.openConnections >= 5 }
        let refused = try server.send("GET", "/healthz")
        #expect(refused.status == 503)
        #expect(refused.code == "overloaded")
        close(held.removeLast())
        var status = 0
        for _ in 0..<50 where status != 200 {
            status = (try? server.send("GET", "/healthz").status) ?? 0
            if status != 200 { usleep(20_000) }
        }
        #expect(status == 200, "a freed connection makes room")
        server.acceptServerErrors(503)
    }

    @Test func bodiesHeldAtOnceAreCappedServerWide() throws {
        let account = try server.register()
        /// Opens an upload of `size` bytes and sends its head and first 64 KiB.
        func startUpload(_ size: Int) throws -> Int32 {
            let fd = try HTTPClient.connect(port: server.port)
            let head =
                "POST /users/me/images HTTP/1.1\r\nHost: h\r\nContent-Type: image/png\r\nContent-Length: \(size)\r\n"
                + "Authorization: Bearer \(account.token)\r\nConnection: close\r\n\r\n"
            let first = Array(head.utf8) + ImageScenarios.png(size: size).prefix(64 * 1024)
            _ = first.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            return fd
        }
        // The first upload asks before it sends its body (`Expect: 100-continue`): the server
        // answers `100 Continue` once it has admitted the head, and reserves the body's 1.5 MB in
        // the same step on its event loop, before it looks at any other connection.
        let firstBody = ImageScenarios.png(size: 1_500_000)
        let first = try HTTPClient.connect(port: server.port)
        defer { close(first) }
        let firstHead =
            "POST /users/me/images HTTP/1.1\r\nHost: h\r\nContent-Type: image/png\r\nContent-Length: \(firstBody.count)\r\n"
            + "Authorization: Bearer \(account.token)\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n"
        _ = firstHead.withCString { send(first, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(first, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var interim: [UInt8] = []
        while find(interim, Array("\r\n\r\n".utf8)) == nil {
            let count = recv(first, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            interim += buffer[..<count]
        }
        let continued = String(decoding: interim, as: UTF8.self)
        try #require(continued == "HTTP/1.1 100 Continue\r\n\r\n", "the first upload was not asked for its body: \(continued.prefix(120))")
        let second = try startUpload(1_000_000)
        defer { close(second) }
        setsockopt(second, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let count = recv(second, &buffer, buffer.count, 0)
        let answer = count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : ""
        #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer.prefix(80))")
        #expect(answer.contains("Retry-After"))
        // The first upload goes on, and once it is answered its bytes are free again.
        _ = firstBody.withUnsafeBytes { send(first, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        let firstCount = recv(first, &buffer, buffer.count, 0)
        #expect(firstCount > 0 && String(decoding: buffer[..<max(0, firstCount)], as: UTF8.self).hasPrefix("HTTP/1.1 201"))
        let again = try ImageScenarios.upload(server, account.token, "image/png", ImageScenarios.png(size: 1_000_000))
        #expect(again.status == 201)
        server.acceptServerErrors(503)
    }
}
