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

    public init(method: HTTPMethod, target: String, version: HTTPVersion = .http1_1, headers: HTTPHeaders = HTTPHeaders(),
                framing: BodyFraming = .none, keepAlive: Bool = true, expectContinue: Bool = false) {
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
        var rest = Substring(target)
        if !rest.hasPrefix("/"), let schemeEnd = rest.range(of: "://") {
            rest = rest[schemeEnd.upperBound...]
            if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) {
                rest = rest[slash...]
            } else {
                rest = ""
            }
            if rest.isEmpty || rest.hasPrefix("?") { rest = "/" + rest }
        }
        if let mark = rest.firstIndex(of: "?") {
            return (String(rest[..<mark]), String(rest[rest.index(after: mark)...]))
        }
        return (String(rest), nil)
    }
}

extension Substring {
    fileprivate func range(of needle: String) -> Range<Index>? {
        var start = startIndex
        while start < endIndex {
            if self[start...].hasPrefix(needle) {
                return start..<index(start, offsetBy: needle.count)
            }
            start = index(after: start)
        }
        return nil
    }
}
