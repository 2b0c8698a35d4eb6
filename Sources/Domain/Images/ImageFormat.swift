/// An image format that users may upload, named by its MIME type.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case jpeg
    case png
    case gif
    case webp
    case heic

    /// The exact `Content-Type` this format is stored and served with.
    public var mimeType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .gif: "image/gif"
        case .webp: "image/webp"
        case .heic: "image/heic"
        }
    }

    /// A `Content-Type` value: the media type is compared case-insensitively and parameters
    /// (`; charset=…`) are ignored. Aliases such as `image/jpg` are not accepted: the API
    /// lists the five types it takes.
    public init?(mimeType: String) {
        var essence = mimeType.utf8.prefix { $0 != UInt8(ascii: ";") }[...]
        while let first = essence.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { essence.removeFirst() }
        while let last = essence.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { essence.removeLast() }
        // ASCII case folding only: Unicode lowering could turn a non-ASCII letter into a match.
        func lowered(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
        guard let format = ImageFormat.allCases.first(where: { $0.mimeType.utf8.elementsEqual(essence.lazy.map(lowered)) }) else {
            return nil
        }
        self = format
    }

    public var description: String { mimeType }

    /// The name people use for the format, for error details ("JPEG").
    var displayName: String {
        switch self {
        case .jpeg: "JPEG"
        case .png: "PNG"
        case .gif: "GIF"
        case .webp: "WebP"
        case .heic: "HEIC"
        }
    }
}
