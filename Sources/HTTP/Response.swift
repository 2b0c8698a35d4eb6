/// A response as a handler builds it; the serializer adds framing (`Content-Length`, `Date`, `Connection`).
public struct Response: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with a body and its content type.
    public init(status: HTTPStatus = .ok, contentType: String, body: [UInt8]) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        self.init(status: status, headers: headers, body: body)
    }
}
