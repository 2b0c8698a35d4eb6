/// Why bytes were refused as an image: a stable code and a detail safe to show to the client.
///
/// The detail names formats and numbers only; it never echoes the uploaded bytes. The API maps
/// codes to statuses (`image_not_found` to `404`, `image_too_large` and `quota_exceeded` to `413`,
/// `too_many_uploads` to `429`, the rest to `422`).
public struct ImageError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable, machine-readable code.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        public var description: String { rawValue }

        /// The bytes are not the declared format (they may be another supported one: `detected`).
        case contentMismatch = "content_mismatch"
        /// The bytes end before the header does.
        case truncated
        /// The width or the height is zero.
        case invalidDimensions = "invalid_dimensions"
        /// The width, the height or their product is over the limits.
        case tooManyPixels = "too_many_pixels"
        /// The header's structure is broken.
        case malformed
        /// There are no bytes at all.
        case empty = "empty_image"
        /// The image is larger than the deployment allows.
        case tooLarge = "image_too_large"
        /// No image with this id belongs to the user (another user's image is not found either).
        case notFound = "image_not_found"
        /// A list order that is neither `newest` nor `oldest`.
        case invalidOrder = "invalid_order"
        /// A thumbnail size that is not one of 128, 256, 512, 1024.
        case invalidSize = "invalid_size"
        /// The image's bytes passed the header checks but cannot be decoded into a thumbnail.
        case undecodable = "undecodable_image"
        /// The user uploaded as many images as the deployment allows in an hour (`retryAfterSeconds`).
        case tooManyUploads = "too_many_uploads"
        /// The user's images would take more bytes than the deployment allows one user.
        case quotaExceeded = "quota_exceeded"
    }

    public let code: Code
    /// A short explanation for people; safe to send to the client.
    public let detail: String
    /// For `contentMismatch`: the supported format the bytes actually are, if any.
    public let detected: ImageFormat?
    /// Where in the bytes the problem was found, for logs.
    public let offset: Int?
    /// For `tooManyUploads`: when to try again.
    public let retryAfterSeconds: Int?

    public init(_ code: Code, _ detail: String, detected: ImageFormat? = nil, offset: Int? = nil, retryAfterSeconds: Int? = nil) {
        self.code = code
        self.detail = detail
        self.detected = detected
        self.offset = offset
        self.retryAfterSeconds = retryAfterSeconds
    }

    public var description: String { "\(code): \(detail)" }

    public var debugDescription: String {
        guard let offset else { return description }
        return "\(description) (at byte \(offset))"
    }

    /// The answer for an id that is unknown, malformed or another user's: all look the same.
    public static let notFound = ImageError(.notFound, "There is no image with this id.")

    static func truncated(_ format: ImageFormat, at offset: Int) -> ImageError {
        ImageError(.truncated, "The \(format.displayName) header is cut short.", offset: offset)
    }

    static func malformed(_ format: ImageFormat, _ detail: String, at offset: Int? = nil) -> ImageError {
        ImageError(.malformed, "Malformed \(format.displayName): \(detail)", offset: offset)
    }
}
