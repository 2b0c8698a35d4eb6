/// How the body of a request is delimited (RFC 9112 §6).
public enum BodyFraming: Sendable, Hashable {
    case none
    case contentLength(Int)
    case chunked
}

/// The request line and header section of a request, validated.
public struct RequestHead: Sendable {
    public var method: HTTPMethod
    /// The request-target exactly as sent.
    public var target: String
    /// The path of the target (origin-form, or the path of an absolute-form target), still percent-encoded.
    public var path: String
    /// The query of the target without `?`, if any.
    public var query: String?
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var framing: BodyFraming
    /// Whether the client allows the connection to stay open after this request.
    public var keepAlive: Bool
    /// Whether the client waits for `100 Continue` before sending the body.
    public var expectContinue: Bool

    public init(
        method: HTTPMethod, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = HTTPHeaders(),
        framing: BodyFraming = .none, keepAlive: Bool = true, expectContinue: Bool = false
    ) {
        self.method = method
        self.target = target
        (self.path, self.query) = RequestHead.split(target: target)
        self.version = version
        self.headers = headers
        self.framing = framing
        self.keepAlive = keepAlive
        self.expectContinue = expectContinue
    }

    /// Splits a target into path and query; an absolute-form target loses its scheme and authority.
    static func split(target: String) -> (path: String, query: String?) {
        let bytes = target.utf8
        var pathStart = bytes.startIndex
        if bytes.first != UInt8(ascii: "/") {
            // absolute-form: skip "scheme://authority"; "*" (asterisk-form) stays as it is.
            if let colon = bytes.firstIndex(of: UInt8(ascii: ":")),
                bytes[colon...].starts(with: "://".utf8)
            {
                let authorityStart = bytes.index(colon, offsetBy: 3)
                pathStart = bytes[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") } ?? bytes.endIndex
                let rest = String(target[pathStart...])
                let (path, query) = split(target: rest.hasPrefix("/") ? rest : "/" + rest)
                return (path, query)
            }
        }
        guard let mark = bytes.firstIndex(of: UInt8(ascii: "?")) else { return (target, nil) }
        return (String(target[pathStart..<mark]), String(target[target.utf8.index(after: mark)...]))
    }
}
