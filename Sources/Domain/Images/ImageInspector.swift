/// Checks that uploaded bytes are the format they claim to be and reads the image's width and
/// height from its headers, without decoding any pixels.
///
/// A pure function over a borrowed buffer: it allocates next to nothing, never reads past the
/// end, and takes time linear in the bytes it looks at, whatever the lengths inside claim.
///
/// Pass the whole file when you have it (an upload held in memory); only the headers are read.
/// When streaming, pass at least the first `min(fileSize, headerBytesNeeded)` bytes. The bytes
/// ending before the header does is `truncated`: the inspector cannot tell a file cut short from
/// a prefix that was too short, so a caller that passed a prefix may retry with more.
public enum ImageInspector {
    /// The prefix that holds the headers of practically every image: JPEG frame headers may
    /// follow large EXIF, ICC and XMP segments, and a HEIC `meta` box follows `ftyp` but can
    /// be tens of kilobytes long.
    public static let headerBytesNeeded = 256 * 1024

    /// Inspects `bytes`, which were declared to be `declared` (by `Content-Type`).
    public static func inspect(
        _ bytes: UnsafeRawBufferPointer, declared: ImageFormat,
        limits: ImageLimits = ImageLimits()
    ) -> Result<ImageInfo, ImageError> {
        Result { () throws(ImageError) -> ImageInfo in
            try info(bytes, declared: declared, limits: limits)
        }
    }

    /// Inspects `bytes`, which were declared to be `declared` (by `Content-Type`).
    public static func inspect(
        _ bytes: [UInt8], declared: ImageFormat,
        limits: ImageLimits = ImageLimits()
    ) -> Result<ImageInfo, ImageError> {
        bytes.withUnsafeBytes { inspect($0, declared: declared, limits: limits) }
    }

    private static func info(
        _ bytes: UnsafeRawBufferPointer, declared: ImageFormat,
        limits: ImageLimits
    ) throws(ImageError) -> ImageInfo {
        let reader = ByteReader(bytes: bytes, format: declared)
        switch declared.signature(in: reader) {
        case .match: break
        case .truncated: throw .truncated(declared, at: bytes.count)
        case .mismatch: throw mismatch(declared: declared, detected: ImageFormat.sniff(bytes))
        }
        let size: Size
        switch declared {
        case .png: size = try pngSize(reader)
        case .gif: size = try gifSize(reader)
        case .jpeg: size = try jpegSize(reader)
        case .webp: size = try webpSize(reader)
        case .heic: size = try heicSize(reader)
        }
        try check(size, declared, limits)
        return ImageInfo(format: declared, width: size.width, height: size.height)
    }

    static func mismatch(declared: ImageFormat, detected: ImageFormat?) -> ImageError {
        guard let detected, detected != declared else {
            return ImageError(.contentMismatch, "The bytes are not \(declared.displayName) (declared \(declared.mimeType)).")
        }
        return ImageError(
            .contentMismatch,
            "Declared \(declared.mimeType) but the bytes are \(detected.displayName) (\(detected.mimeType)).",
            detected: detected)
    }

    private static func check(_ size: Size, _ format: ImageFormat, _ limits: ImageLimits) throws(ImageError) {
        guard size.width > 0, size.height > 0 else {
            throw ImageError(.invalidDimensions, "The \(format.displayName) image is \(size.width)×\(size.height) pixels.")
        }
        guard size.width <= limits.maxDimension, size.height <= limits.maxDimension else {
            throw ImageError(
                .tooManyPixels,
                "The image is \(size.width)×\(size.height) pixels; "
                    + "neither side may exceed \(limits.maxDimension).")
        }
        let (pixels, overflow) = size.width.multipliedReportingOverflow(by: size.height)
        guard !overflow, pixels <= limits.maxPixels else {
            throw ImageError(
                .tooManyPixels,
                "The image is \(size.width)×\(size.height) pixels; "
                    + "at most \(limits.maxPixels) pixels are allowed.")
        }
    }

    /// Width and height as the header states them, not yet checked against the limits.
    struct Size: Equatable {
        var width: Int
        var height: Int

        init(_ width: some BinaryInteger, _ height: some BinaryInteger) {
            self.width = Int(width)
            self.height = Int(height)
        }
    }
}
