/// Bounds on what a client may send; the defaults follow nginx.
public struct HTTPLimits: Sendable, Hashable {
    /// Longest request line in bytes, without CRLF (`414` beyond).
    public var maxRequestLineBytes: Int = 8 * 1024
    /// Longest single header field line in bytes (`431` beyond).
    public var maxFieldBytes: Int = 8 * 1024
    /// Largest header section including the request line (`431` beyond).
    public var maxHeaderBytes: Int = 32 * 1024
    /// Most header fields in a request, and trailer fields in a chunked body (`431` beyond).
    public var maxHeaderCount: Int = 100
    /// Largest request body unless a route allows more (`413` beyond).
    public var maxBodyBytes: Int = 1024 * 1024
    /// Longest chunk extension on one chunk-size line (`400` beyond).
    public var maxChunkExtensionBytes: Int = 1024

    public init() {}

    public static let `default` = HTTPLimits()
}
