/// Why a request could not be parsed: a stable machine-readable code and the status to answer with.
///
/// Every parse error ends the connection after the error response: after a framing error the
/// server cannot know where the next request would start, and guessing is how smuggling works.
public struct HTTPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public let code: String
    public let status: HTTPStatus
    /// A short text safe to show to the client; it never echoes the input.
    public let detail: String

    public init(code: String, status: HTTPStatus, detail: String) {
        self.code = code
        self.status = status
        self.detail = detail
    }

    public var description: String { "\(status.code) \(code): \(detail)" }

    public static func == (lhs: HTTPParseError, rhs: HTTPParseError) -> Bool { lhs.code == rhs.code && lhs.status == rhs.status }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    static func bad(_ code: String, _ detail: String) -> HTTPParseError {
        HTTPParseError(code: code, status: .badRequest, detail: detail)
    }

    public static let invalidRequestLine = bad("invalid_request_line", "The request line is malformed.")
    public static let invalidMethod = bad("invalid_method", "The request method is not a valid token.")
    public static let invalidTarget = bad("invalid_target", "The request target is malformed.")
    public static let invalidVersion = bad("invalid_version", "The HTTP version is malformed.")
    public static let unsupportedVersion = HTTPParseError(code: "unsupported_version", status: .httpVersionNotSupported,
                                                          detail: "Only HTTP/1.0 and HTTP/1.1 are supported.")
    public static let requestLineTooLong = HTTPParseError(code: "request_line_too_long", status: .uriTooLong,
                                                          detail: "The request line is too long.")
    public static let fieldTooLarge = HTTPParseError(code: "header_field_too_large", status: .requestHeaderFieldsTooLarge,
                                                     detail: "A header field is too large.")
    public static let headersTooLarge = HTTPParseError(code: "headers_too_large", status: .requestHeaderFieldsTooLarge,
                                                       detail: "The header section is too large.")
    public static let tooManyHeaders = HTTPParseError(code: "too_many_headers", status: .requestHeaderFieldsTooLarge,
                                                      detail: "The request has too many header fields.")
    public static let bareLF = bad("bare_lf", "A line ends in LF without CR.")
    public static let bareCR = bad("bare_cr", "A CR is not followed by LF.")
    public static let obsFold = bad("obs_fold", "Folded header lines are not accepted.")
    public static let whitespaceBeforeColon = bad("whitespace_before_colon", "A header field name is followed by whitespace.")
    public static let invalidFieldName = bad("invalid_field_name", "A header field name is malformed.")
    public static let invalidFieldValue = bad("invalid_field_value", "A header field value contains a forbidden character.")
    public static let missingHost = bad("missing_host", "An HTTP/1.1 request needs exactly one Host header.")
    public static let duplicateHost = bad("duplicate_host", "The request has more than one Host header.")
    public static let invalidHost = bad("invalid_host", "The Host header is malformed.")
    public static let duplicateContentLength = bad("duplicate_content_length", "The request has more than one Content-Length.")
    public static let invalidContentLength = bad("invalid_content_length", "The Content-Length is not a valid length.")
    public static let contentLengthWithTransferEncoding = bad("content_length_with_transfer_encoding",
                                                              "Content-Length and Transfer-Encoding cannot both be sent.")
    public static let chunkedNotFinal = bad("chunked_not_final", "The final transfer coding must be chunked.")
    public static let transferEncodingInHTTP10 = bad("transfer_encoding_http10", "Transfer-Encoding is not allowed in HTTP/1.0.")
    public static let unsupportedTransferCoding = HTTPParseError(code: "unsupported_transfer_coding", status: .notImplemented,
                                                                 detail: "Only the chunked transfer coding is supported.")
    public static let unsupportedExpectation = HTTPParseError(code: "unsupported_expectation", status: .expectationFailed,
                                                              detail: "Only the 100-continue expectation is supported.")
    public static let bodyTooLarge = HTTPParseError(code: "body_too_large", status: .contentTooLarge,
                                                    detail: "The request body is too large.")
    public static let invalidChunkSize = bad("invalid_chunk_size", "A chunk size is malformed.")
    public static let chunkSizeOverflow = bad("chunk_size_overflow", "A chunk size is too large.")
    public static let invalidChunkExtension = bad("invalid_chunk_extension", "A chunk extension is malformed.")
    public static let chunkExtensionTooLong = bad("chunk_extension_too_long", "A chunk extension is too long.")
    public static let invalidChunkTerminator = bad("invalid_chunk_terminator", "Chunk data is not followed by CRLF.")
    public static let invalidTrailer = bad("invalid_trailer", "A trailer field is malformed.")
}
