/// One `GET` of a small document over HTTP/1.1 (`https`, or `http` where the caller allows it),
/// on its own connection closed afterwards: how a sign-in provider's key set is fetched. The
/// whole exchange is bounded by `timeout` per read or write, and the answer by `maximumBytes`.
public enum HTTPGet {
    /// What came back: the status, the header fields (names lowercased), the body (de-chunked).
    public struct Response: Sendable {
        public var status: Int
        public var headers: [(name: String, value: String)]
        public var body: [UInt8]

        public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
    }

    /// An `http(s)://host[:port]/path` URL, as far as a `GET` needs it.
    public struct Target: Sendable, Equatable {
        public var isSecure: Bool
        public var host: String
        public var port: Int
        /// The path and query, from its `/`.
        public var path: String

        /// Nil for anything but an absolute `http` or `https` URL with a host (no user info, no fragment).
        public init?(_ text: String) {
            let rest: Substring
            if text.hasPrefix("https://") {
                isSecure = true
                rest = text.dropFirst(8)
            } else if text.hasPrefix("http://") {
                isSecure = false
                rest = text.dropFirst(7)
            } else {
                return nil
            }
            guard !text.contains("#"), text.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else { return nil }
            let authority = rest.prefix { $0 != "/" && $0 != "?" }
            let path = rest.dropFirst(authority.count)
            guard !authority.isEmpty, !authority.contains("@") else { return nil }
            var hostPart = Substring(authority)
            var portText: Substring?
            if authority.hasPrefix("[") {
                guard let close = authority.firstIndex(of: "]") else { return nil }
                hostPart = authority[authority.index(after: authority.startIndex)..<close]
                let after = authority[authority.index(after: close)...]
                if !after.isEmpty {
                    guard after.hasPrefix(":") else { return nil }
                    portText = after.dropFirst()
                }
            } else if let colon = authority.lastIndex(of: ":") {
                hostPart = authority[..<colon]
                portText = authority[authority.index(after: colon)...]
            }
            guard !hostPart.isEmpty else { return nil }
            host = String(hostPart)
            if let portText {
                guard let number = Int(portText), (1...65535).contains(number) else { return nil }
                port = number
            } else {
                port = isSecure ? 443 : 80
            }
            self.path = path.isEmpty ? "/" : (path.hasPrefix("?") ? "/" + path : String(path))
        }

        /// Whether the host is a loopback address or `localhost`: where plain `http` may be allowed.
        public var isLoopback: Bool {
            let octets = host.split(separator: ".", omittingEmptySubsequences: false)
            let isIPv4Loopback = octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
            return host == "localhost" || host == "::1" || isIPv4Loopback
        }

        /// The `Host` field: the host, bracketed when IPv6, with a port that is not the scheme's.
        var hostField: String {
            let name = host.contains(":") ? "[\(host)]" : host
            return port == (isSecure ? 443 : 80) ? name : "\(name):\(port)"
        }
    }

    /// Fetches `target`; a redirect is an answer like any other (not followed).
    public static func fetch(
        _ target: Target, accept: String = "application/json", caFile: String? = nil, timeout: Duration = .seconds(10),
        maximumBytes: Int = 1 << 20
    ) throws(OutboundError) -> Response {
        let stream = try ByteStream(host: target.host, port: target.port, timeout: timeout)
        defer { stream.close(grace: .milliseconds(100)) }
        if target.isSecure { try stream.startTLS(caFile: caFile) }
        let request =
            "GET \(target.path) HTTP/1.1\r\nHost: \(target.hostField)\r\nAccept: \(accept)\r\n"
            + "User-Agent: Exosphere\r\nConnection: close\r\n\r\n"
        try stream.write(Array(request.utf8))
        var reader = ResponseReader(maximumBytes: maximumBytes)
        while true {
            let bytes = try stream.read()
            if let response = try reader.take(bytes, closed: bytes.isEmpty) { return response }
        }
    }
}

/// An HTTP/1.1 response read from bytes as they come: the head, then a body by `Content-Length`,
/// by chunks, or to the connection's close. No I/O, so it is tested on byte strings.
public struct ResponseReader {
    private var buffer: [UInt8] = []
    private var head: (status: Int, headers: [(name: String, value: String)])?
    private var bodyStart = 0
    private let maximumBytes: Int
    /// The answer to a `HEAD`: a head only, whatever its `Content-Length` says.
    private let isHead: Bool
    /// Whether the caller takes the body as it comes (`takeStartedBody`): no room is made for it whole.
    private let isStreamed: Bool

    public init(maximumBytes: Int, head isHead: Bool = false, streamed isStreamed: Bool = false) {
        self.maximumBytes = maximumBytes
        self.isHead = isHead
        self.isStreamed = isStreamed
    }

    /// Adds `bytes` (empty with `closed` once the server closed); the response once it is whole.
    public mutating func take(_ bytes: [UInt8], closed: Bool) throws(OutboundError) -> HTTPGet.Response? {
        buffer += bytes
        guard buffer.count <= maximumBytes + 16_384 else { throw Self.malformed("the answer is larger than \(maximumBytes) bytes") }
        if head == nil {
            guard let end = Self.find([13, 10, 13, 10], in: buffer[...], from: 0) else {
                if closed { throw Self.malformed("the connection closed before the answer's head ended") }
                return nil
            }
            head = try Self.parseHead(buffer[..<end])
            bodyStart = end + 4
            // A body of a known length grows the buffer once, not at every read.
            if let length = head?.headers.first(where: { $0.name == "content-length" }).flatMap({ Int($0.value) }), length <= maximumBytes,
                !isStreamed
            {
                buffer.reserveCapacity(bodyStart + length)
            }
        }
        guard let head else { return nil }
        // RFC 9112 6.3: no body after a HEAD, a 204 or a 304, whatever the fields say.
        if isHead || head.status == 204 || head.status == 304 {
            return HTTPGet.Response(status: head.status, headers: head.headers, body: [])
        }
        let rest = buffer[bodyStart...]
        var body: [UInt8]
        if head.headers.contains(where: { $0.name == "transfer-encoding" }) {
            guard head.headers.last(where: { $0.name == "transfer-encoding" })?.value.lowercased() == "chunked" else {
                throw Self.malformed("a transfer coding other than chunked")
            }
            guard let decoded = try Self.dechunk(rest) else {
                if closed { throw Self.malformed("the connection closed inside a chunked body") }
                return nil
            }
            body = decoded
        } else if let lengthText = head.headers.first(where: { $0.name == "content-length" })?.value {
            guard let length = Int(lengthText), length >= 0 else { throw Self.malformed("a bad Content-Length") }
            guard length <= maximumBytes else { throw Self.malformed("the answer is larger than \(maximumBytes) bytes") }
            guard rest.count >= length else {
                if closed { throw Self.malformed("the connection closed before the body's \(length) bytes") }
                return nil
            }
            body = Array(rest.prefix(length))
        } else {
            guard closed else { return nil }
            body = Array(rest)
        }
        guard body.count <= maximumBytes else { throw Self.malformed("the answer is larger than \(maximumBytes) bytes") }
        return HTTPGet.Response(status: head.status, headers: head.headers, body: body)
    }

    /// Once the head of a success is in and a body of `Content-Length` bytes follows it (not
    /// chunked, not after a `HEAD` or a `204`): the head, that length, and the body's bytes read so far, taken
    /// out of the reader, for a caller that passes the rest on as it comes instead of holding it.
    public mutating func takeStartedBody() -> (status: Int, headers: [(name: String, value: String)], length: Int, bytes: [UInt8])? {
        guard let head, !isHead, (200...299).contains(head.status), head.status != 204,
            !head.headers.contains(where: { $0.name == "transfer-encoding" }),
            let length = head.headers.first(where: { $0.name == "content-length" }).flatMap({ Int($0.value) }), length >= 0
        else { return nil }
        let bytes = Array(buffer[bodyStart...])
        buffer = []
        bodyStart = 0
        return (head.status, head.headers, length, bytes)
    }

    private static func parseHead(_ bytes: ArraySlice<UInt8>) throws(OutboundError) -> (Int, [(name: String, value: String)]) {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.first ?? ""
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), parts[1].count == 3, let status = Int(parts[1]), status >= 100 else {
            throw Self.malformed("not an HTTP/1.x status line")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { throw Self.malformed("a malformed header field") }
            headers.append((line[..<colon].lowercased(), line[line.index(after: colon)...].trimmingSpaces))
        }
        return (status, headers)
    }

    /// The chunks' data once the last chunk and the trailer are in; nil while more is needed.
    private static func dechunk(_ bytes: ArraySlice<UInt8>) throws(OutboundError) -> [UInt8]? {
        var body: [UInt8] = []
        var index = bytes.startIndex
        while true {
            guard let lineEnd = find([13, 10], in: bytes, from: index) else { return nil }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).prefix { $0 != ";" }.trimmingSpaces
            guard !sizeText.isEmpty, sizeText.count <= 8, let size = Int(sizeText, radix: 16) else { throw Self.malformed("a bad chunk size") }
            index = lineEnd + 2
            if size == 0 {
                // Trailer fields, up to the empty line.
                while true {
                    guard let end = find([13, 10], in: bytes, from: index) else { return nil }
                    if end == index { return body }
                    index = end + 2
                }
            }
            guard bytes.endIndex - index >= size + 2 else { return nil }
            body += bytes[index..<(index + size)]
            guard bytes[index + size] == 13, bytes[index + size + 1] == 10 else { throw Self.malformed("a chunk without its CRLF") }
            index += size + 2
        }
    }

    /// Where `needle` first starts in `bytes` at or after `start`.
    private static func find(_ needle: [UInt8], in bytes: ArraySlice<UInt8>, from start: Int) -> Int? {
        guard bytes.endIndex - start >= needle.count else { return nil }
        var index = start
        while index <= bytes.endIndex - needle.count {
            if bytes[index] == needle[0], bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    private static func malformed(_ why: String) -> OutboundError { OutboundError(.protocolError, why) }
}

extension StringProtocol {
    fileprivate var trimmingSpaces: String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != " " && $0 != "\t" }) else { return "" }
        let last = scalars.lastIndex(where: { $0 != " " && $0 != "\t" })!
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars[first...last])
        return text
    }
}
