import AWSSignature
import Cryptography
import Glibc
import Outbound
import Synchronization
import Threads

/// An S3 client for one bucket, over the project's own HTTP/1.1 client (`Outbound`): requests
/// signed with Signature Version 4, keep-alive connections, TLS verified, every connect, read and
/// write bounded, and every wait by the calling thread's request deadline too (`RequestDeadline`),
/// so that a store that hangs is an answer by then. Blocking: callers run it off the event loops. Credentials are used to sign and
/// never appear in an error or a log.
public final class S3Client: Sendable {
    public let configuration: S3Configuration
    private let signer: SignatureV4
    private let isSecure: Bool
    /// The endpoint's host and port.
    private let endpointHost: String
    private let port: Int
    /// The host requests go to: the endpoint's, or `bucket.` before it for virtual-host addressing.
    private let requestHost: String
    /// The `Host` field: `requestHost`, bracketed when IPv6, with a port that is not the scheme's.
    private let hostField: String
    private let connections: S3ConnectionPool
    private let clock: @Sendable () -> Int64
    private let counters = Mutex(S3Statistics(requests: 0, failures: 0, connectionsOpened: 0, seconds: 0))

    /// Checks `configuration` (throws `invalidConfiguration`); connects only when a request is made.
    /// `clock` gives seconds since 1970 for signatures (tests pin it).
    public init(_ configuration: S3Configuration, clock: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }) throws(S3Error) {
        let target = try configuration.target()
        self.configuration = configuration
        signer = SignatureV4(credentials: configuration.credentials, region: configuration.region)
        isSecure = target.isSecure
        endpointHost = target.host
        port = target.port
        requestHost = configuration.pathStyle ? target.host : "\(configuration.bucket).\(target.host)"
        let name = requestHost.contains(":") ? "[\(requestHost)]" : requestHost
        hostField = port == (isSecure ? 443 : 80) ? name : "\(name):\(port)"
        connections = S3ConnectionPool(host: requestHost, port: port, isSecure: isSecure, configuration: configuration)
        self.clock = clock
    }

    public var statistics: S3Statistics {
        var statistics = counters.withLock { $0 }
        statistics.connectionsOpened = connections.opened.load(ordering: .relaxed)
        return statistics
    }

    // MARK: - Objects

    /// Stores `bytes` under `key`, acknowledged only once the store confirmed these bytes: the
    /// body's SHA-256 is signed (`x-amz-content-sha256`: the store refuses a body that does not
    /// match it), and the ETag it answers must be their MD5 (for stores whose ETag is an MD5: not
    /// with SSE-KMS), computed here while the store takes the body. `sha256`, when the caller has
    /// it already, saves hashing the bytes again.
    @discardableResult
    public func putObject(_ key: String, _ bytes: [UInt8], contentType: String = "application/octet-stream", sha256: [UInt8]? = nil) throws(S3Error)
        -> S3Object
    {
        var md5: [UInt8] = []
        let answer = try exchange(
            "PUT", key: key, headers: [("content-type", contentType)], body: bytes,
            payload: sha256.map { .sha256(Hex.encode($0)) } ?? .hashing(bytes), streamed: false, whileTheStoreWorks: { md5 = MD5.hash(bytes) })
        guard case .whole(let response) = answer else { preconditionFailure("a body streamed that was not asked for") }
        guard response.status == 200 else { throw Self.failure(response, "PUT \(key)") }
        let etag = Self.unquoted(response.header("etag") ?? "")
        if Self.isMD5(etag), etag != Hex.encode(md5.isEmpty ? MD5.hash(bytes) : md5) {
            throw S3Error(.checksumMismatch, status: 200, "PUT \(key): the store's ETag \(etag) is not the MD5 of the \(bytes.count) bytes sent")
        }
        return S3Object(etag: etag, size: bytes.count, contentType: contentType)
    }

    /// The object's bytes, or `range` of them (inclusive offsets), or `.notModified` when its ETag is
    /// `ifNoneMatch`. A whole body whose ETag is an MD5 is checked against it when `verify` is set.
    public func getObject(_ key: String, range: ClosedRange<Int>? = nil, ifNoneMatch: String? = nil, verify: Bool = false) throws(S3Error)
        -> S3ObjectBody
    {
        var headers: [(name: String, value: String)] = []
        if let range { headers.append(("range", "bytes=\(range.lowerBound)-\(range.upperBound)")) }
        if let ifNoneMatch { headers.append(("if-none-match", "\"\(ifNoneMatch)\"")) }
        let response = try send("GET", key: key, headers: headers)
        let etag = Self.unquoted(response.header("etag") ?? "")
        let contentType = response.header("content-type")
        switch response.status {
        case 200:
            if let length = response.header("content-length").flatMap(Int.init), length != response.body.count {
                throw S3Error(.checksumMismatch, status: 200, "GET \(key): \(response.body.count) bytes of \(length)")
            }
            if verify, Self.isMD5(etag), Hex.encode(MD5.hash(response.body)) != etag {
                throw S3Error(.checksumMismatch, status: 200, "GET \(key): the bytes' MD5 is not the ETag \(etag)")
            }
            return S3ObjectBody(status: .whole, bytes: response.body, etag: etag, contentType: contentType, totalSize: response.body.count)
        case 206:
            let contentRange = response.header("content-range")
            return S3ObjectBody(
                status: .partial, bytes: response.body, etag: etag, contentType: contentType, totalSize: Self.totalSize(contentRange),
                contentRange: contentRange)
        case 304:
            return S3ObjectBody(status: .notModified, bytes: [], etag: etag.isEmpty ? (ifNoneMatch ?? "") : etag, contentType: contentType)
        default:
            throw Self.failure(response, "GET \(key)")
        }
    }

    /// The object's bytes, or `range` of them (inclusive offsets), as the store sends them: the
    /// answer's head is read here, the body by the stream's `read`, so that a download passes the
    /// object on without holding it whole. `whileTheStoreWorks` runs once the request is written
    /// and before its answer is read (not at all when no connection could be had).
    public func openObject(
        _ key: String, range: ClosedRange<Int>? = nil, whileTheStoreWorks: (() -> Void)? = nil
    ) throws(S3Error) -> S3ObjectStream {
        var headers: [(name: String, value: String)] = []
        if let range { headers.append(("range", "bytes=\(range.lowerBound)-\(range.upperBound)")) }
        switch try exchange("GET", key: key, headers: headers, streamed: true, whileTheStoreWorks: whileTheStoreWorks) {
        case .started(let stream):
            return stream
        case .whole(let response) where response.status == 200 || response.status == 206:
            // It came in the first read, its connection already given back.
            return stream(response.status, response.headers, length: response.body.count, first: response.body, nil, "GET \(key)")
        case .whole(let response):
            throw Self.failure(response, "GET \(key)")
        }
    }

    /// The object's ETag, size and type; throws `notFound` when there is none.
    public func headObject(_ key: String) throws(S3Error) -> S3Object {
        let response = try send("HEAD", key: key)
        guard response.status == 200 else { throw Self.failure(response, "HEAD \(key)") }
        return S3Object(
            etag: Self.unquoted(response.header("etag") ?? ""), size: response.header("content-length").flatMap(Int.init) ?? 0,
            contentType: response.header("content-type"))
    }

    /// Removes the object; an object already gone is no error.
    public func deleteObject(_ key: String) throws(S3Error) {
        let response = try send("DELETE", key: key)
        guard response.status == 204 || response.status == 200 || (response.status == 404 && Self.storeCode(response) == "NoSuchKey") else {
            throw Self.failure(response, "DELETE \(key)")
        }
    }

    /// One page of the keys under `prefix`, in key order (`ListObjectsV2`).
    public func listObjects(prefix: String, continuationToken: String? = nil, maximumKeys: Int = 1000) throws(S3Error) -> S3ListPage {
        var query: [(name: String, value: String)] = [
            ("list-type", "2"), ("prefix", prefix), ("max-keys", String(maximumKeys)), ("encoding-type", "url"),
        ]
        if let continuationToken { query.append(("continuation-token", continuationToken)) }
        let response = try send("GET", key: nil, query: query)
        guard response.status == 200 else { throw Self.failure(response, "GET ?list-type=2") }
        let text = String(decoding: response.body, as: UTF8.self)[...]
        guard text.contains("<ListBucketResult") else { throw S3Error(.protocolError, status: 200, "a listing without ListBucketResult") }
        var objects: [S3ListedObject] = []
        for entry in S3XML.elements("Contents", in: text) {
            guard let key = S3XML.value("Key", in: entry), let size = S3XML.value("Size", in: entry).flatMap(Int.init) else {
                throw S3Error(.protocolError, status: 200, "a listing entry without a key or a size")
            }
            objects.append(
                S3ListedObject(
                    key: S3XML.decodeURLEncoded(key), size: size, etag: Self.unquoted(S3XML.value("ETag", in: entry) ?? ""),
                    lastModified: S3XML.value("LastModified", in: entry) ?? ""))
        }
        let truncated = S3XML.value("IsTruncated", in: text) == "true"
        let next = truncated ? S3XML.value("NextContinuationToken", in: text) : nil
        if truncated && next == nil { throw S3Error(.protocolError, status: 200, "a truncated listing without a continuation token") }
        return S3ListPage(objects: objects, nextContinuationToken: next)
    }

    /// Every key under `prefix`, page after page.
    public func listAllObjects(prefix: String, pageSize: Int = 1000) throws(S3Error) -> [S3ListedObject] {
        var objects: [S3ListedObject] = []
        var token: String?
        repeat {
            let page = try listObjects(prefix: prefix, continuationToken: token, maximumKeys: pageSize)
            objects += page.objects
            token = page.nextContinuationToken
        } while token != nil
        return objects
    }

    // MARK: - The bucket

    /// Creates the bucket unless it exists and is ours.
    public func createBucketIfMissing() throws(S3Error) {
        let head = try send("HEAD", key: nil)
        if head.status == 200 { return }
        guard head.status == 404 else { throw Self.failure(head, "HEAD bucket \(configuration.bucket)") }
        let body =
            configuration.region == "us-east-1"
            ? []
            : Array(
                ("<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>\(configuration.region)"
                    + "</LocationConstraint></CreateBucketConfiguration>").utf8)
        let response = try send("PUT", key: nil, body: body, payload: .hashing(body))
        guard response.status == 200 || Self.storeCode(response) == "BucketAlreadyOwnedByYou" else {
            throw Self.failure(response, "PUT bucket \(configuration.bucket)")
        }
    }

    /// Whether the store answers for the bucket with these credentials (a `HEAD` of the bucket): for `/readyz`.
    public func checkBucket() throws(S3Error) {
        let response = try send("HEAD", key: nil)
        guard response.status == 200 else { throw Self.failure(response, "HEAD bucket \(configuration.bucket)") }
    }

    // MARK: - Presigned URLs

    /// A URL anyone may `GET` the object with for `expires` seconds (1 s to 7 days), signed now.
    public func presignedGetURL(_ key: String, expires seconds: Int) -> String {
        let request = SignatureV4.Request(method: "GET", path: path(key), headers: [("host", hostField)], payload: .unsigned)
        return (isSecure ? "https://" : "http://") + hostField
            + signer.presignedTarget(request, date: AMZDate(secondsSinceEpoch: clock()), expires: seconds)
    }

    /// Closes idle connections.
    public func closeIdleConnections() { connections.closeIdle() }

    // MARK: - Requests

    private func path(_ key: String?) -> String {
        let base = configuration.pathStyle ? "/" + configuration.bucket : ""
        guard let key else { return base.isEmpty ? "/" : base }
        return base + "/" + URIEncoding.encodePath(key)
    }

    /// Signs and sends one request and reads its whole answer.
    private func send(
        _ method: String, key: String?, query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = [],
        body: [UInt8] = [], payload: SignatureV4.Payload = .empty
    ) throws(S3Error) -> HTTPGet.Response {
        switch try exchange(method, key: key, query: query, headers: headers, body: body, payload: payload, streamed: false) {
        case .whole(let response): return response
        case .started: preconditionFailure("a body streamed that was not asked for")
        }
    }

    /// An answer read whole, or the head of a successful one whose body is read on (`openObject`).
    private enum Answer {
        case whole(HTTPGet.Response)
        case started(S3ObjectStream)
    }

    /// Signs and sends one request, on a kept-alive connection when one is idle, and reads its
    /// answer: whole, or with `streamed` a successful one up to its head. `whileTheStoreWorks`
    /// runs once, after the request is written and before its answer is read. A kept-alive connection the
    /// store closed while idle fails before any answer byte: the request then goes again on a new
    /// connection (every S3 request here is idempotent).
    private func exchange(
        _ method: String, key: String?, query: [(name: String, value: String)] = [], headers: [(name: String, value: String)] = [],
        body: [UInt8] = [], payload: SignatureV4.Payload = .empty, streamed: Bool, whileTheStoreWorks: (() -> Void)? = nil
    ) throws(S3Error) -> Answer {
        var whileTheStoreWorks = whileTheStoreWorks
        let start = ContinuousClock.now
        var failed = true
        defer {
            let seconds =
                Double((ContinuousClock.now - start).components.attoseconds) / 1e18 + Double((ContinuousClock.now - start).components.seconds)
            counters.withLock {
                $0.requests += 1
                $0.seconds += seconds
                if failed { $0.failures += 1 }
                $0.lastFailed = failed
            }
        }
        let request = SignatureV4.Request(method: method, path: path(key), query: query, headers: [("host", hostField)] + headers, payload: payload)
        var head = "\(method) \(request.target) HTTP/1.1\r\n"
        for (name, value) in signer.sign(request, date: AMZDate(secondsSinceEpoch: clock())) { head += "\(name): \(value)\r\n" }
        if method == "PUT" || method == "POST" || !body.isEmpty { head += "content-length: \(body.count)\r\n" }
        head += "user-agent: Exosphere\r\n\r\n"
        let bytes = Array(head.utf8) + body
        let what = "\(method) \(key ?? "bucket \(configuration.bucket)")"
        let deadline = RequestDeadline.current
        /// `own`, or less when the request's deadline comes first; a timeout once it has passed.
        func bounded(_ own: Duration) throws(OutboundError) -> Duration {
            guard let deadline else { return own }
            let left = deadline.remaining
            guard left > .zero else { throw OutboundError(.timeout, "the request's deadline passed") }
            return min(own, left)
        }
        var attempt = 0
        while true {
            attempt += 1
            let connection: S3ConnectionPool.Connection
            do throws(OutboundError) {
                connection = try connections.take(connectTimeout: bounded(configuration.connectTimeout))
            } catch {
                throw Self.mapped(error, what)
            }
            var received = false
            do throws(OutboundError) {
                connection.stream.timeout = try bounded(configuration.timeout)
                try connection.stream.write(bytes)
                // Work of the caller's that overlaps the store's, once.
                whileTheStoreWorks?()
                whileTheStoreWorks = nil
                var reader = ResponseReader(maximumBytes: configuration.maximumObjectBytes, head: method == "HEAD", streamed: streamed)
                while true {
                    connection.stream.timeout = try bounded(configuration.timeout)
                    // Large reads: an object of megabytes in a few system calls, not hundreds. A
                    // streamed body is read by its stream, into buffers it reuses: here its head.
                    let chunk = try connection.stream.read(limit: streamed ? 16 * 1024 : 256 * 1024)
                    if chunk.isEmpty && !received && connection.isReused && attempt == 1 {
                        throw OutboundError(.connectionClosed, "closed while idle")
                    }
                    received = received || !chunk.isEmpty
                    let whole: HTTPGet.Response?
                    do throws(OutboundError) {
                        whole = try reader.take(chunk, closed: chunk.isEmpty)
                    } catch  where chunk.isEmpty {
                        // A store that closes in the middle of its answer is going away (a restart, a
                        // crash): unavailable, not a protocol error.
                        throw OutboundError(.connectionClosed, error.detail)
                    }
                    if let response = whole {
                        if chunk.isEmpty || !Self.keepsAlive(response, head: method == "HEAD") {
                            connection.stream.close(grace: .zero)
                        } else {
                            connections.giveBack(connection)
                        }
                        let expected = response.status < 500 && !(response.status == 403 || response.status == 400)
                        failed = !(expected || response.status == 404)
                        return .whole(response)
                    }
                    if streamed, let started = reader.takeStartedBody() {
                        guard started.bytes.count <= started.length else { throw OutboundError(.protocolError, "more bytes than the Content-Length") }
                        failed = false
                        return .started(stream(started.status, started.headers, length: started.length, first: started.bytes, connection, what))
                    }
                }
            } catch {
                connection.stream.close(grace: .zero)
                if connection.isReused && !received && attempt == 1 && error.code != .timeout { continue }
                throw Self.mapped(error, what)
            }
        }
    }

    /// A body that starts with `first`, the rest to be read from `connection` (none: it came whole).
    private func stream(
        _ status: Int, _ headers: [(name: String, value: String)], length: Int, first: [UInt8], _ connection: S3ConnectionPool.Connection?,
        _ what: String
    ) -> S3ObjectStream {
        func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }
        return S3ObjectStream(
            status: status == 206 ? .partial : .whole, etag: Self.unquoted(header("etag") ?? ""), length: length,
            totalSize: status == 206 ? Self.totalSize(header("content-range")) : length,
            first: first, connection: connection, keepsAlive: header("connection")?.lowercased() != "close", connections: connections,
            timeout: configuration.timeout, what: what)
    }

    /// The whole object's size from a `Content-Range` (`bytes 10-19/2097152`).
    private static func totalSize(_ contentRange: String?) -> Int? {
        contentRange.flatMap { $0.split(separator: "/").last.flatMap { Int($0) } }
    }

    /// Whether the connection may carry another request after `response`.
    private static func keepsAlive(_ response: HTTPGet.Response, head: Bool) -> Bool {
        if response.header("connection")?.lowercased() == "close" { return false }
        if head || response.status == 204 || response.status == 304 { return true }
        return response.header("content-length") != nil || response.header("transfer-encoding") != nil
    }

    static func mapped(_ error: OutboundError, _ what: String) -> S3Error {
        switch error.code {
        case .timeout: S3Error(.timeout, "\(what): \(error.detail)")
        case .protocolError: S3Error(.protocolError, "\(what): \(error.detail)")
        default: S3Error(.unavailable, "\(what): \(error.code.rawValue): \(error.detail)")
        }
    }

    /// The error a non-success answer means.
    private static func failure(_ response: HTTPGet.Response, _ what: String) -> S3Error {
        let code = storeCode(response)
        let message = S3XML.value("Message", in: String(decoding: response.body.prefix(4096), as: UTF8.self)[...])
        let detail = "\(what): \(message ?? "HTTP \(response.status)")"
        switch (response.status, code) {
        case (404, _): return S3Error(.notFound, status: 404, storeCode: code, detail)
        case (_, "BadDigest"), (_, "XAmzContentSHA256Mismatch"), (_, "InvalidDigest"):
            return S3Error(.checksumMismatch, status: response.status, storeCode: code, detail)
        case (403, _), (_, "SignatureDoesNotMatch"), (_, "RequestTimeTooSkewed"), (_, "InvalidAccessKeyId"):
            return S3Error(.accessDenied, status: response.status, storeCode: code, detail)
        case (500..., _): return S3Error(.unavailable, status: response.status, storeCode: code, detail)
        default: return S3Error(.rejected, status: response.status, storeCode: code, detail)
        }
    }

    private static func storeCode(_ response: HTTPGet.Response) -> String? {
        S3XML.value("Code", in: String(decoding: response.body.prefix(4096), as: UTF8.self)[...])
    }

    private static func unquoted(_ etag: String) -> String {
        var etag = Substring(etag)
        if etag.hasPrefix("W/") { etag = etag.dropFirst(2) }
        if etag.hasPrefix("\""), etag.hasSuffix("\""), etag.count >= 2 { etag = etag.dropFirst().dropLast() }
        return String(etag)
    }

    private static func isMD5(_ etag: String) -> Bool {
        etag.utf8.count == 32
            && etag.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }
}
