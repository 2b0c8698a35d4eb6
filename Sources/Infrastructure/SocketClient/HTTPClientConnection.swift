import Glibc

/// A blocking HTTP/1.1 client connection on a TCP socket: how the health check and the tests talk
/// to a server. Every blocking call is bounded by `timeout`, and by `deadline` when one is given
/// (the health check answers within its deadline, whatever the server does).
public final class HTTPClientConnection {
    public let fd: Int32
    /// Bytes received and not yet taken by `readResponse`.
    public private(set) var buffer: [UInt8] = []
    private let timeout: Duration
    private let deadline: ContinuousClock.Instant?
    private var closed = false

    /// Connects to `host` (a name or an address, IPv4 or IPv6) and `port`. A `receiveBuffer` fixes
    /// `SO_RCVBUF` before connecting, which turns off the kernel's autotuning (a slow reader).
    public init(
        host: String = "127.0.0.1", port: Int, timeout: Duration = .seconds(30), deadline: ContinuousClock.Instant? = nil,
        receiveBuffer: Int32? = nil
    ) throws(HTTPClientError) {
        self.timeout = timeout
        self.deadline = deadline
        fd = try HTTPClientConnection.connectSocket(
            host: host, port: port, timeout: timeout, deadline: deadline,
            receiveBuffer: receiveBuffer)
    }

    /// A blocking, connected socket of its caller's own (who closes it), for tests that write and
    /// read raw bytes.
    public static func connectSocket(
        host: String = "127.0.0.1", port: Int, timeout: Duration = .seconds(30),
        deadline: ContinuousClock.Instant? = nil, receiveBuffer: Int32? = nil
    ) throws(HTTPClientError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else { throw HTTPClientError("cannot resolve \(host): \(String(cString: gai_strerror(status)))") }
        defer { freeaddrinfo(list) }
        var failure = HTTPClientError("connect", errno: ECONNREFUSED)
        var entry = list
        while let address = entry {
            entry = address.pointee.ai_next
            let candidate = socket(address.pointee.ai_family, address.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard candidate >= 0 else {
                failure = HTTPClientError("socket", errno: errno)
                continue
            }
            if var size = receiveBuffer { setsockopt(candidate, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
            // Linux bounds a blocking connect by SO_SNDTIMEO.
            if arm(candidate, timeout: timeout, deadline: deadline), connect(candidate, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                return candidate
            }
            failure = HTTPClientError("connect to port \(port)", errno: expired(deadline) ? EAGAIN : errno)
            Glibc.close(candidate)
        }
        throw failure
    }

    deinit { close() }

    public func close() {
        if !closed { Glibc.close(fd) }
        closed = true
    }

    public func send(_ text: String) throws(HTTPClientError) { try send(Array(text.utf8)) }

    /// Writes all of `bytes`.
    public func send(_ bytes: [UInt8]) throws(HTTPClientError) {
        var offset = 0
        while offset < bytes.count {
            guard arm() else { throw HTTPClientError("send", errno: EAGAIN) }
            let count = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw HTTPClientError("send", errno: errno)
            }
            offset += count
        }
    }

    public func shutdownWrite() { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Reads more bytes (at most `limit`) into `buffer`; false at the end of the stream.
    @discardableResult
    public func fill(limit: Int = 64 * 1024) throws(HTTPClientError) -> Bool {
        var chunk = [UInt8](repeating: 0, count: limit)
        while true {
            guard arm() else { throw HTTPClientError("receive", errno: EAGAIN) }
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer += chunk[..<count]
                return true
            }
            if count == 0 { return false }
            if errno == EINTR { continue }
            throw HTTPClientError("receive", errno: errno)
        }
    }

    /// Takes `count` bytes off the front of `buffer`.
    public func consume(_ count: Int) {
        buffer.removeFirst(count)
    }

    /// Reads one response: its head, then a body of `Content-Length` bytes (none after `HEAD`, for
    /// 1xx, 204 and 304). Without a length the body is empty, or with `bodyToEndWithoutLength`
    /// whatever comes until the server closes.
    public func readResponse(head: Bool = false, bodyToEndWithoutLength: Bool = false) throws(HTTPClientError) -> HTTPClientResponse {
        var headEnd = HTTPClientConnection.find(buffer, HTTPClientConnection.headTerminator)
        while headEnd == nil {
            guard try fill() else { throw HTTPClientError("the connection closed before a response head (\(buffer.count) bytes)") }
            headEnd = HTTPClientConnection.find(buffer, HTTPClientConnection.headTerminator)
        }
        var response = try HTTPClientResponse(head: Array(buffer[..<headEnd!]))
        consume(headEnd! + 4)
        if head || (100..<200).contains(response.status) || response.status == 204 || response.status == 304 { return response }
        if let text = response["Content-Length"] {
            guard let length = Int(text) else { throw HTTPClientError("Content-Length \(text) is not a number") }
            while buffer.count < length {
                guard try fill() else { throw HTTPClientError("the connection closed inside a body") }
            }
            response.body = Array(buffer[..<length])
            consume(length)
        } else if bodyToEndWithoutLength {
            while try fill() {}
            response.body = buffer
            consume(buffer.count)
        }
        return response
    }

    /// Sets the socket's timeouts to what is left of the time allowed; false when none is left.
    private func arm() -> Bool { HTTPClientConnection.arm(fd, timeout: timeout, deadline: deadline) }

    private static func arm(_ fd: Int32, timeout: Duration, deadline: ContinuousClock.Instant?) -> Bool {
        var left = timeout
        if let deadline { left = min(left, deadline - ContinuousClock.now) }
        guard left > .zero else { return false }
        let (seconds, attoseconds) = left.components
        // Zero would mean "no limit".
        var value = timeval(tv_sec: Int(seconds), tv_usec: max(1, Int(attoseconds / 1_000_000_000_000)))
        let size = socklen_t(MemoryLayout<timeval>.size)
        return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &value, size) == 0 && setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &value, size) == 0
    }

    private static func expired(_ deadline: ContinuousClock.Instant?) -> Bool {
        deadline.map { ContinuousClock.now >= $0 } ?? false
    }

    private static let headTerminator = Array("\r\n\r\n".utf8)

    /// The index of the first `needle` in `haystack`.
    public static func find(_ haystack: [UInt8], _ needle: [UInt8]) -> Int? {
        guard let first = needle.first, haystack.count >= needle.count else { return nil }
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first, haystack[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }
}

/// A response as it came: status, reason, header fields in order, body.
public struct HTTPClientResponse: Sendable {
    public var status: Int
    public var reason: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    /// Parses a response head (without its final empty line).
    public init(head: [UInt8]) throws(HTTPClientError) {
        var lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.isEmpty ? [] : lines.removeFirst().split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/"), statusLine[1].count == 3, let status = Int(statusLine[1]) else {
            throw HTTPClientError("not an HTTP status line: \(String(decoding: head.prefix(80), as: UTF8.self).debugDescription)")
        }
        self.status = status
        reason = statusLine.count > 2 ? String(statusLine[2]) : ""
        headers = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw HTTPClientError("bad header line \(String(line).debugDescription)") }
            let value = line[line.index(after: colon)...].drop { $0 == " " || $0 == "\t" }
            headers.append((String(line[..<colon]), String(value.reversed().drop { $0 == " " || $0 == "\t" }.reversed())))
        }
        body = []
    }

    /// The first field named `name` (case-insensitive).
    public subscript(name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}

/// Why a client connection failed: what it was doing and, for a system call, its errno.
public struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    public let description: String
    /// The system call's error, when one failed (`EAGAIN`: the time allowed ran out).
    public let errno: Int32?

    public init(_ description: String) {
        self.description = description
        errno = nil
    }

    init(_ operation: String, errno: Int32) {
        let reason = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINPROGRESS ? "no answer in time" : String(cString: strerror(errno))
        description = "\(operation): \(reason) (errno \(errno))"
        self.errno = errno
    }
}
