/// Why bytes were refused as an image: a stable code and a detail safe to show to the client.
///
/// The detail names formats and numbers only; it never echoes the uploaded bytes. The API maps
/// codes to statuses (`image_not_found` to `404`, `image_too_large` to `413`, the rest to `422`).
public struct ImageError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// A stable, machine-readable code; an open set of static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The bytes are not the declared format (they may be another supported one: `detected`).
        public static let contentMismatch = Code("content_mismatch")
        /// The bytes end before the header does.
        public static let truncated = Code("truncated")
        /// The width or the height is zero.
        public static let invalidDimensions = Code("invalid_dimensions")
        /// The width, the height or their product is over the limits.
        public static let tooManyPixels = Code("too_many_pixels")
        /// The header's structure is broken.
        public static let malformed = Code("malformed")
        /// There are no bytes at all.
        public static let empty = Code("empty_image")
        /// The image is larger than the deployment allows.
        public static let tooLarge = Code("image_too_large")
        /// No image with this id belongs to the user (another user's image is not found either).
        public static let notFound = Code("image_not_found")
        /// A list cursor that this server did not issue.
        public static let invalidCursor = Code("invalid_cursor")
    }

    public let code: Code
    /// A short explanation for people; safe to send to the client.
    public let detail: String
    /// For `contentMismatch`: the supported format the bytes actually are, if any.
    public let detected: ImageFormat?
    /// Where in the bytes the problem was found, for logs.
    public let offset: Int?

    public init(_ code: Code, _ detail: String, detected: ImageFormat? = nil, offset: Int? = nil) {
        self.code = code
        self.detail = detail
        self.detected = detected
        self.offset = offset
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
