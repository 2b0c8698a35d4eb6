import Foundation
import Glibc
import HTTP
import HTTPServer
import SocketClient
import StructuredLogging
import Synchronization

/// A failure of the raw test client, with the errno or the reason.
struct ClientError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One response as read off the wire.
typealias WireResponse = HTTPClientResponse

extension HTTPClientResponse {
    var text: String { String(decoding: body, as: UTF8.self) }
    var closes: Bool { self["Connection"]?.lowercased() == "close" }
}

/// A blocking TCP client that sends exactly the bytes it is given and parses responses itself.
typealias RawClient = HTTPClientConnection

extension HTTPClientConnection {
    /// Connects to 127.0.0.1:port; each read and write times out after `timeout` seconds.
    convenience init(port: Int, timeout: Double = 5, receiveBuffer: Int32? = nil) throws {
        try self.init(host: "127.0.0.1", port: port, timeout: .milliseconds(Int(timeout * 1000)), receiveBuffer: receiveBuffer)
    }

    /// Bytes received but not yet taken by `readResponse`.
    var bufferedCount: Int { buffer.count }

    /// Sends a simple request and reads its response.
    func request(_ method: String = "GET", _ path: String, headers: [String] = [], body: String? = nil) throws -> WireResponse {
        var text = "\(method) \(path) HTTP/1.1\r\nHost: test\r\n"
        for header in headers { text += header + "\r\n" }
        if let body { text += "Content-Length: \(body.utf8.count)\r\n" }
        text += "\r\n" + (body ?? "")
        try send(text)
        return try readResponse(head: method == "HEAD")
    }

    /// Whether the server ends the connection (EOF or reset) with no further bytes.
    func readsEOF() -> Bool {
        guard buffer.isEmpty else { return false }
        do { return try !fill() } catch { return error.errno != nil && error.errno != EAGAIN }
    }
}

/// The outcome of a connect attempt, for "refused" checks.
func connectErrno(port: Int) -> Int32 {
    do {
        _ = try RawClient(port: port, timeout: 1)
        return 0
    } catch {
        return (error as? HTTPClientError)?.errno == ECONNREFUSED ? ECONNREFUSED : -1
    }
}

/// A one-shot latch for handlers and test threads.
final class Gate: Sendable {
    private let isOpen = Atomic<Bool>(false)
    func open() { isOpen.store(true, ordering: .releasing) }
    var opened: Bool { isOpen.load(ordering: .acquiring) }
    /// Waits up to `timeout` seconds; true when opened.
    @discardableResult
    func wait(timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while !opened {
            if Date() > deadline { return false }
            usleep(1_000)
        }
        return true
    }
}

/// Work on a real thread (never the cooperative pool: the clients block), joined with a timeout.
final class Background<T: Sendable>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var value: T?

    init(_ body: @escaping @Sendable () -> T) {
        Thread.detachNewThread { [self] in
            let result = body()
            lock.withLock { value = result }
            done.signal()
        }
    }

    /// The result, or nil if it did not finish within `timeout` seconds.
    func wait(timeout: Double = 10) -> T? {
        guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        return lock.withLock { value }
    }
}

/// Seconds since `start`.
func elapsed(since start: DispatchTime) -> Double {
    Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
}

/// An error whose text must never reach a client.
struct SecretError: Error, CustomStringConvertible {
    var description: String { "secret-detail: password=hunter2" }
}

/// Routes that every live test can use.
func testRouter(_ extra: (inout Router) -> Void = { _ in }) -> Router {
    var router = Router()
    router.get("/hello", execution: .loop) { _, _ in
        Response(status: .ok, contentType: "text/plain", body: Array("hello".utf8))
    }
    router.get("/healthz", execution: .loop) { _, _ in
        Response(status: .ok, contentType: "application/json", body: Array(#"{"status":"ok"}"#.utf8))
    }
    router.get("/slow") { _, _ in
        usleep(300_000)
        return Response(status: .ok, contentType: "text/plain", body: Array("slow".utf8))
    }
    router.add(.post, "/echo") { request, _ in
        Response(status: .ok, contentType: "application/octet-stream", body: request.body)
    }
    router.add(.post, "/small", bodyLimit: .bytes(4)) { request, _ in
        Response(status: .ok, contentType: "application/octet-stream", body: request.body)
    }
    router.get("/boom") { _, _ in throw SecretError() }
    router.get("/conflict", execution: .loop) { _, _ in
        throw Problem(status: .conflict, domainCode: TestProblemCode.emailTaken, detail: "That email is taken.")
    }
    router.get("/id", execution: .loop) { _, context in
        Response(status: .ok, contentType: "text/plain", body: Array(context.requestID.utf8))
    }
    router.get("/items/{id}", execution: .loop) { _, context in
        Response(status: .ok, contentType: "text/plain", body: Array((context.parameters["id"] ?? "-").utf8))
    }
    extra(&router)
    return router
}

/// Starts a server on 127.0.0.1 and an ephemeral port, with timeouts short enough for tests.
func startServer(router: Router = testRouter(), _ adjust: (inout ServerConfiguration) -> Void = { _ in }) throws -> Server {
    var configuration = ServerConfiguration()
    configuration.host = "127.0.0.1"
    configuration.port = 0
    configuration.eventLoops = 1
    configuration.workerThreads = 4
    configuration.headerTimeout = .seconds(1)
    configuration.idleTimeout = .seconds(5)
    configuration.bodyTimeoutGrace = .seconds(2)
    configuration.lingerTimeout = .milliseconds(500)
    configuration.drainTimeout = .seconds(3)
    adjust(&configuration)
    let server = Server(configuration: configuration, router: router, logger: .silent)
    try server.start()
    return server
}

/// CPU seconds used so far by these threads of this process (other tests' servers run meanwhile).
func cpuSeconds(ofThreads ids: [Int32]) throws -> Double {
    let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
    var total = 0.0
    for id in ids {
        let stat = try String(contentsOfFile: "/proc/self/task/\(id)/stat", encoding: .utf8)
        // Fields after "(comm)": state is field 3; utime and stime are fields 14 and 15.
        guard let close = stat.lastIndex(of: ")") else { throw ClientError("no command in /proc/self/task/\(id)/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw ClientError("no CPU times in /proc/self/task/\(id)/stat")
        }
        total += (user + system) / ticks
    }
    return total
}

/// A domain's code, as the API's domains have theirs.
enum TestProblemCode: String {
    case emailTaken = "email_taken"
}
