/// Why a `multipart/form-data` body was refused: a stable machine-readable code and the status to answer with.
///
/// Equality is by code and status, so `error == .malformed` holds whatever the detail says;
/// the detail tells people which rule failed and never echoes the body.
public struct MultipartError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable code.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        public var description: String { rawValue }

        case malformed
        case invalidBoundary = "invalid_boundary"
        case partHeadTooLarge = "part_head_too_large"
        case tooManyParts = "too_many_parts"
        case noFilePart = "no_file_part"
        case multipleFileParts = "multiple_file_parts"
    }

    public let code: Code
    public let status: HTTPStatus
    /// A short text safe to show to the client.
    public let detail: String

    public init(code: Code, status: HTTPStatus, detail: String) {
        self.code = code
        self.status = status
        self.detail = detail
    }

    public var description: String { "\(status.code) \(code): \(detail)" }

    public static func == (lhs: MultipartError, rhs: MultipartError) -> Bool { lhs.code == rhs.code && lhs.status == rhs.status }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// A `malformed` error that says which rule the body broke.
    static func malformed(because detail: String) -> MultipartError {
        MultipartError(code: .malformed, status: .badRequest, detail: detail)
    }

    /// The framing or a part's header section is broken.
    public static let malformed = malformed(because: "The multipart body is malformed.")
    /// The boundary is not 1 to 70 characters of RFC 2046 `bchars`, or ends in a space.
    public static let invalidBoundary = MultipartError(
        code: .invalidBoundary, status: .badRequest,
        detail: "The multipart boundary must be 1 to 70 allowed characters.")
    /// A part's header section is over `MultipartFormData.Limits.maxPartHeadBytes`.
    public static let partHeadTooLarge = MultipartError(
        code: .partHeadTooLarge, status: .badRequest,
        detail: "The header section of a part is too large.")
    /// The body has more parts than `MultipartFormData.Limits.maxParts`.
    public static let tooManyParts = MultipartError(
        code: .tooManyParts, status: .badRequest,
        detail: "The multipart body has too many parts.")
    /// The body is well formed, but no part has a `filename` parameter.
    public static let noFilePart = MultipartError(
        code: .noFilePart, status: .unprocessableContent,
        detail: "The body has no file part (a part with a filename parameter).")
    /// The body is well formed, but more than one part has a `filename` parameter.
    public static let multipleFileParts = MultipartError(
        code: .multipleFileParts, status: .unprocessableContent,
        detail: "The body has more than one file part; send one file.")
}
