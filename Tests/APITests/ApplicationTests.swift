@testable import API
import Glibc
import HTTP
import HTTPServer
import Logging
import Testing
import Postgres
import Foundation

/// A failed plain HTTP exchange.
struct HTTPGetError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// `GET path` over a fresh connection with `Connection: close`; the whole answer split into head and body.
func httpGet(port: Int, path: String) throws -> (status: Int, head: String, body: String) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw HTTPGetError("socket: errno \(errno)") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard connected == 0 else { throw HTTPGetError("connect: errno \(errno)") }
    let request = Array("GET \(path) HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".utf8)
    guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
        throw HTTPGetError("send: errno \(errno)")
    }
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { break }
        guard n > 0 else { throw HTTPGetError("recv: errno \(errno)") }
        received.append(contentsOf: chunk[0..<n])
    }
    let text = String(decoding: received, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n"), text.hasPrefix("HTTP/1.1 "),
          let status = Int(text.dropFirst(9).prefix(3)) else { throw HTTPGetError("not an HTTP response: \(text.debugDescription)") }
    return (status, String(text[..<split.lowerBound]), String(text[split.upperBound...]))
}

@Suite struct ApplicationTests {
    @Test func servesHealthzOnAnEphemeralPortAndShutsDown() throws {
        let cluster = try LocalCluster.startTemporary()
        defer { cluster.stop() }
        var configuration = try Configuration.parse(arguments: ["--port", "0", "--event-loops", "1", "--worker-threads", "2",
                                                                "--drain-timeout", "1"], environment: [:])
        configuration.server.host = "127.0.0.1"
        configuration.databaseURL = cluster.connectionString
        configuration.migrationsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("migrations").path
        let application = try Application(configuration: configuration, logger: .silent)
        defer { application.shutdown() }
        let port = application.server.port
        #expect(port > 0)
        let health = try httpGet(port: port, path: "/healthz")
        #expect(health.status == 200)
        #expect(health.body == #"{"status":"ok"}"#)
        #expect(health.head.contains("Content-Type: application/json"))
        #expect(health.head.contains("Connection: close"))
        #expect(try httpGet(port: port, path: "/healthz/").status == 404)
        let ready = try httpGet(port: port, path: "/readyz")
        #expect(ready.status == 200)
        #expect(ready.body == #"{"status":"ready"}"#)
        if case .found(let route, _) = application.server.router.match(method: .get, path: "/healthz") {
            #expect(route.execution == .inline)
        } else {
            Issue.record("GET /healthz is not routed")
        }
    }
}
