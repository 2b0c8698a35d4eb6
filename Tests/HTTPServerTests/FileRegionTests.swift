import Files
import Foundation
import Glibc
import HTTP
@testable import HTTPServer
import SocketClient
import TestSupport
import Testing

/// A temporary file of deterministic bytes, removed with the value's `remove()`.
private struct TemporaryFile {
    let path: String
    let bytes: [UInt8]

    init(size: Int) throws {
        path = NSTemporaryDirectory() + "exosphere-file-\(UUID().uuidString)"
        bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 11) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// A sparse file: large without taking the time or the space to write it.
    init(sparse size: Int) throws {
        path = NSTemporaryDirectory() + "exosphere-file-\(UUID().uuidString)"
        bytes = []
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0, ftruncate(fd, off_t(size)) == 0 else { throw ClientError("cannot create \(path)") }
        close(fd)
    }

    func remove() { unlink(path) }

    /// Descriptors of this process open on this file right now.
    var openDescriptors: Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.count { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\($0)")) == path }
    }

    /// Waits up to `timeout` seconds for the server to let go of the file.
    func waitUntilClosed(timeout: Double = 5) -> Bool {
        let start = DispatchTime.now()
        while openDescriptors > 0 {
            if elapsed(since: start) > timeout { return false }
            usleep(10_000)
        }
        return true
    }
}

/// A server whose `/file` serves `file` with `sendfile`, `/range` a region of it, and `/truncated`
/// a response whose file shrinks to 1000 bytes after the region was taken.
private func startFileServer(_ file: TemporaryFile) throws -> Server {
    try startServer(
        router: testRouter { router in
            router.get("/file") { _, _ in
                Response(status: .ok, contentType: "application/octet-stream", file: try FileRegion(ReadableFile(path: file.path)))
            }
            router.get("/range") { _, _ in
                Response(
                    status: .ok, contentType: "application/octet-stream",
                    file: try FileRegion(ReadableFile(path: file.path), offset: 1000, length: 5000))
            }
            router.get("/truncated") { _, _ in
                let region = try FileRegion(ReadableFile(path: file.path))
                guard truncate(file.path, 1000) == 0 else { throw SystemError(function: "truncate", errno: errno) }
                return Response(status: .ok, contentType: "application/octet-stream", file: region)
            }
            router.get("/missing-file") { _, _ in
                Response(status: .ok, contentType: "application/octet-stream", file: try FileRegion(ReadableFile(path: file.path + ".none")))
            }
        })
}

/// File bodies on a real socket: written with `sendfile`, never leaking the descriptor.
@Suite(.testThreads, .serialized) struct FileRegionTests {
    @Test func fileIsServedByteIdenticalAndTheConnectionIsReused() throws {
        let file = try TemporaryFile(size: 3 << 20)
        defer { file.remove() }
        let server = try startFileServer(file)
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let response = try client.request("GET", "/file")
        #expect(response.status == 200)
        #expect(response["Content-Length"] == String(3 << 20))
        #expect(response["Content-Type"] == "application/octet-stream")
        #expect(response.body.count == file.bytes.count)
        #expect(response.body == file.bytes)
        #expect(!response.closes)
        // Keep-alive after a file body: the same connection serves the next request, and the file again.
        #expect(try client.request("GET", "/hello").text == "hello")
        #expect(try client.request("GET", "/file").body == file.bytes)
        #expect(server.metrics.connectionsAccepted == 1)
        #expect(file.waitUntilClosed())
    }

    @Test func headGetsTheLengthButNoBody() throws {
        let file = try TemporaryFile(size: 3 << 20)
        defer { file.remove() }
        let server = try startFileServer(file)
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let head = try client.request("HEAD", "/file")
        #expect(head.status == 200)
        #expect(head["Content-Length"] == String(3 << 20))
        #expect(head.body.isEmpty)
        // Had any of the file followed, this response would be read as garbage.
        #expect(try client.request("GET", "/hello").text == "hello")
        #expect(client.bufferedCount == 0)
        #expect(file.waitUntilClosed())
    }

    @Test func pipelinedRequestsAroundFileBodies() throws {
        let file = try TemporaryFile(size: 3 << 20)
        defer { file.remove() }
        let server = try startFileServer(file)
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        try client.send(
            "GET /file HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /items/2 HTTP/1.1\r\nHost: t\r\n\r\n"
                + "HEAD /file HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /range HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /items/5 HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(try client.readResponse().body == file.bytes)
        #expect(try client.readResponse().text == "2")
        #expect(try client.readResponse(head: true)["Content-Length"] == String(3 << 20))
        #expect(try client.readResponse().body == Array(file.bytes[1000..<6000]))
        #expect(try client.readResponse().text == "5")
        #expect(file.waitUntilClosed())
    }

    @Test func rangeRegionIsServedExactly() throws {
        let file = try TemporaryFile(size: 64 << 10)
        defer { file.remove() }
        let server = try startFileServer(file)
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        let response = try client.request("GET", "/range")
        #expect(response["Content-Length"] == "5000")
        #expect(response.body == Array(file.bytes[1000..<6000]))
        #expect(try client.request("GET", "/hello").text == "hello")
    }

    @Test func slowReaderGetsEverything() throws {
        // More than the server's socket buffer can take (4 MiB at most here), so sendfile meets EAGAIN.
        let file = try TemporaryFile(size: 8 << 20)
        defer { file.remove() }
        let server = try startFileServer(file)
        defer { server.shutdown() }
        // A small receive window: the server meets EAGAIN again and again and must resume on EPOLLOUT.
        let client = try RawClient(port: server.port, receiveBuffer: 16 << 10)
        try client.send("GET /file HTTP/1.1\r\nHost: t\r\n\r\n")
        var reads = 0
        while client.bufferedCount < file.bytes.count {
            guard try client.fill(limit: 8 << 10) else { break }
            reads += 1
            if reads % 8 == 0 { usleep(2_000) }
        }
        let response = try client.readResponse()
        #expect(response.body == file.bytes)
        #expect(reads > 100)
        #expect(try client.request("GET", "/hello").text == "hello")
        #expect(file.waitUntilClosed())
    }

    @Test func clientGoneMidBodyDoesNotLeakTheFile() throws {
        // Far more than the socket buffers hold, so the server is surely mid-body when the client leaves.
        let file = try TemporaryFile(sparse: 64 << 20)
        defer { file.remove() }
        let server = try startFileServer(file)
        defer { server.shutdown() }
        #expect(file.openDescriptors == 0)
        for _ in 0..<3 {
            let client = try RawClient(port: server.port, receiveBuffer: 64 << 10)
            try client.send("GET /file HTTP/1.1\r\nHost: t\r\n\r\n")
            while client.bufferedCount < 200 << 10 { try client.fill() }
            #expect(file.openDescriptors >= 1)  // the response is in flight and holds the file
        }  // each client closes with unread data: a reset, and EPIPE / ECONNRESET on the server
        #expect(file.waitUntilClosed())
        #expect(server.openConnections == 0)
        // The loop survived the broken pipes (no SIGPIPE) and serves on.
        let client = try RawClient(port: server.port)
        #expect(try client.request("GET", "/hello").text == "hello")
    }

    @Test func fileTruncatedUnderneathClosesTheConnectionOnly() throws {
        let file = try TemporaryFile(size: 3 << 20)
        defer { file.remove() }
        let server = try startFileServer(file)
        defer { server.shutdown() }
        let other = try RawClient(port: server.port)
        #expect(try other.request("GET", "/hello").text == "hello")
        let client = try RawClient(port: server.port)
        try client.send("GET /truncated HTTP/1.1\r\nHost: t\r\n\r\n")
        // The head promised 3 MiB; 1000 bytes are left, then the server can only end the connection.
        #expect(throws: HTTPClientError.self) { try client.readResponse() }
        #expect(client.bufferedCount == 1000)
        #expect(file.waitUntilClosed())
        // Everyone else is served as before, on new connections and on kept-alive ones.
        #expect(try other.request("GET", "/hello").text == "hello")
        #expect(try RawClient(port: server.port).request("GET", "/items/9").text == "9")
    }

    @Test func fileThatCannotBeOpenedIs500() throws {
        let file = try TemporaryFile(size: 10)
        defer { file.remove() }
        let server = try startFileServer(file)
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        #expect(try client.request("GET", "/missing-file").status == 500)
        #expect(try client.request("GET", "/hello").text == "hello")
    }

    // MARK: - FileRegion

    @Test func regionOutsideTheFileIsRefused() throws {
        let file = try TemporaryFile(size: 100)
        defer { file.remove() }
        #expect(try FileRegion(ReadableFile(path: file.path)).length == 100)
        #expect(try FileRegion(ReadableFile(path: file.path), offset: 40).length == 60)
        #expect(try FileRegion(ReadableFile(path: file.path), offset: 100).length == 0)
        #expect(try FileRegion(ReadableFile(path: file.path), offset: 90, length: 10).length == 10)
        for (offset, length) in [(90, 11), (101, nil), (-1, nil), (0, -1)] as [(Int, Int?)] {
            #expect(throws: SystemError.self) { try FileRegion(ReadableFile(path: file.path), offset: offset, length: length) }
        }
        #expect(file.openDescriptors == 0)
        #expect { try ReadableFile(path: NSTemporaryDirectory()) } throws: { ($0 as? FileSystemError)?.code == EISDIR }
        #expect { try ReadableFile(path: file.path + ".none") } throws: { ($0 as? FileSystemError)?.code == ENOENT }
        // A FIFO neither blocks the open nor passes for a file.
        let fifo = file.path + ".fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        #expect { try ReadableFile(path: fifo) } throws: { ($0 as? FileSystemError)?.code == EINVAL }
    }

    @Test func regionClosesItsDescriptorWhenReleased() throws {
        let file = try TemporaryFile(size: 100)
        defer { file.remove() }
        var region: FileRegion? = try FileRegion(ReadableFile(path: file.path))
        var response = Response(status: .ok, contentType: "text/plain", file: region!)
        region = nil
        #expect(file.openDescriptors == 1)  // the response holds it
        response.body = [1]  // the other kind of body replaces the file, and the last holder lets go
        #expect(response.file == nil)
        #expect(file.openDescriptors == 0)
    }
}
