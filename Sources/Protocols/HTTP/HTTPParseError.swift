/// Why a request could not be parsed: a stable machine-readable code and the status to answer with.
///
/// Every parse error ends the connection after the error response: after a framing error the
/// server cannot know where the next request would start, and guessing is how smuggling works.
public struct HTTPParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable code.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        public var description: String { rawValue }

        case invalidRequestLine = "invalid_request_line"
        case invalidMethod = "invalid_method"
        case invalidTarget = "invalid_target"
        case invalidVersion = "invalid_version"
        case unsupportedVersion = "unsupported_version"
        case requestLineTooLong = "request_line_too_long"
        case headerFieldTooLarge = "header_field_too_large"
        case headersTooLarge = "headers_too_large"
        case tooManyHeaders = "too_many_headers"
        case bareLf = "bare_lf"
        case bareCr = "bare_cr"
        case obsFold = "obs_fold"
        case whitespaceBeforeColon = "whitespace_before_colon"
        case invalidFieldName = "invalid_field_name"
        case invalidFieldValue = "invalid_field_value"
        case missingHost = "missing_host"
        case duplicateHost = "duplicate_host"
        case invalidHost = "invalid_host"
        case duplicateContentLength = "duplicate_content_length"
        case invalidContentLength = "invalid_content_length"
        case contentLengthWithTransferEncoding = "content_length_with_transfer_encoding"
        case chunkedNotFinal = "chunked_not_final"
        case transferEncodingHttp10 = "transfer_encoding_http10"
        case unsupportedTransferCoding = "unsupported_transfer_coding"
        case unsupportedExpectation = "unsupported_expectation"
        case bodyTooLarge = "body_too_large"
        case invalidChunkSize = "invalid_chunk_size"
        case chunkSizeOverflow = "chunk_size_overflow"
        case invalidChunkExtension = "invalid_chunk_extension"
        case chunkExtensionTooLong = "chunk_extension_too_long"
        case invalidChunkTerminator = "invalid_chunk_terminator"
        case invalidTrailer = "invalid_trailer"
        case headerTimeout = "header_timeout"
        case bodyTimeout = "body_timeout"
    }

    public let code: Code
    public let status: HTTPStatus
    /// A short text safe to show to the client; it never echoes the input.
    public let detail: String

    public init(code: Code, status: HTTPStatus, detail: String) {
        self.code = code
        self.status = status
        self.detail = detail
    }

    public var description: String { "\(status.code) \(code): \(detail)" }

    public static func == (lhs: HTTPParseError, rhs: HTTPParseError) -> Bool { lhs.code == rhs.code && lhs.status == rhs.status }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    static func bad(_ code: Code, _ detail: String) -> HTTPParseError {
        HTTPParseError(code: code, status: .badRequest, detail: detail)
    }

    public static let invalidRequestLine = bad(.invalidRequestLine, "The request line is malformed.")
    public static let invalidMethod = bad(.invalidMethod, "The request method is not a valid token.")
    public static let invalidTarget = bad(.invalidTarget, "The request target is malformed.")
    public static let invalidVersion = bad(.invalidVersion, "The HTTP version is malformed.")
    public static let unsupportedVersion = HTTPParseError(
        code: .unsupportedVersion, status: .httpVersionNotSupported,
        detail: "Only HTTP/1.0 and HTTP/1.1 are supported.")
    public static let requestLineTooLong = HTTPParseError(
        code: .requestLineTooLong, status: .uriTooLong,
        detail: "The request line is too long.")
    public static let fieldTooLarge = HTTPParseError(
        code: .headerFieldTooLarge, status: .requestHeaderFieldsTooLarge,
        detail: "A header field is too large.")
    public static let headersTooLarge = HTTPParseError(
        code: .headersTooLarge, status: .requestHeaderFieldsTooLarge,
        detail: "The header section is too large.")
    public static let tooManyHeaders = HTTPParseError(
        code: .tooManyHeaders, status: .requestHeaderFieldsTooLarge,
        detail: "The request has too many header fields.")
    public static let bareLF = bad(.bareLf, "A line ends in LF without CR.")
    public static let bareCR = bad(.bareCr, "A CR is not followed by LF.")
    public static let obsFold = bad(.obsFold, "Folded header lines are not accepted.")
    public static let whitespaceBeforeColon = bad(.whitespaceBeforeColon, "A header field name is followed by whitespace.")
    public static let invalidFieldName = bad(.invalidFieldName, "A header field name is malformed.")
    public static let invalidFieldValue = bad(.invalidFieldValue, "A header field value contains a forbidden character.")
    public static let missingHost = bad(.missingHost, "An HTTP/1.1 request needs exactly one Host header.")
    public static let duplicateHost = bad(.duplicateHost, "The request has more than one Host header.")
    public static let invalidHost = bad(.invalidHost, "The Host header is malformed.")
    public static let duplicateContentLength = bad(.duplicateContentLength, "The request has more than one Content-Length.")
    public static let invalidContentLength = bad(.invalidContentLength, "The Content-Length is not a valid length.")
    public static let contentLengthWithTransferEncoding = bad(
        .contentLengthWithTransferEncoding,
        "Content-Length and Transfer-Encoding cannot both be sent.")
    public static let chunkedNotFinal = bad(.chunkedNotFinal, "The final transfer coding must be chunked.")
    public static let transferEncodingInHTTP10 = bad(.transferEncodingHttp10, "Transfer-Encoding is not allowed in HTTP/1.0.")
    public static let unsupportedTransferCoding = HTTPParseError(
        code: .unsupportedTransferCoding, status: .notImplemented,
        detail: "Only the chunked transfer coding is supported.")
    public static let unsupportedExpectation = HTTPParseError(
        code: .unsupportedExpectation, status: .expectationFailed,
        detail: "Only the 100-continue expectation is supported.")
    public static let bodyTooLarge = HTTPParseError(
        code: .bodyTooLarge, status: .contentTooLarge,
        detail: "The request body is too large.")
    public static let invalidChunkSize = bad(.invalidChunkSize, "A chunk size is malformed.")
    public static let chunkSizeOverflow = bad(.chunkSizeOverflow, "A chunk size is too large.")
    public static let invalidChunkExtension = bad(.invalidChunkExtension, "A chunk extension is malformed.")
    public static let chunkExtensionTooLong = bad(.chunkExtensionTooLong, "A chunk extension is too long.")
    public static let invalidChunkTerminator = bad(.invalidChunkTerminator, "Chunk data is not followed by CRLF.")
    public static let invalidTrailer = bad(.invalidTrailer, "A trailer field is malformed.")
}
