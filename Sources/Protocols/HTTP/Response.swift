/// A response as a handler builds it; the serializer adds framing (`Content-Length`, `Date`, `Connection`).
///
/// The body is either `body` (bytes in memory) or `file` (a region of an open file the server
/// writes with `sendfile`, or a stream it pulls chunk by chunk); setting one clears the other, so
/// the last one set wins.
public struct Response: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8] {
        didSet { if !body.isEmpty { file = nil } }
    }
    /// A body taken from a file or a stream instead of `body`; dropping the response releases it.
    public var file: (any ResponseBodySource)? {
        didSet { if file != nil { body = [] } }
    }

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
        self.file = nil
    }

    /// A response with a body and its content type.
    public init(status: HTTPStatus = .ok, contentType: String, body: [UInt8]) {
        var headers = HTTPHeaders()
        // Room for what handlers and the server usually add: ETag, Cache-Control, X-Request-Id.
        headers.reserveCapacity(fields: 4, bytes: 160)
        headers.add(name: "Content-Type", value: contentType)
        self.init(status: status, headers: headers, body: body)
    }

    /// A response whose body is a region of a file, and its content type.
    public init(status: HTTPStatus = .ok, contentType: String, file: any ResponseFile) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        self.init(status: status, headers: headers)
        self.file = file
    }

    /// How many bytes the body has, whichever kind it is; nil for an event stream, whose length
    /// is known only at its end (it is sent chunked).
    public var bodyLength: Int? {
        guard let file else { return body.count }
        return (file as? any SizedResponseBody)?.length
    }
}
