/// The encodings a thumbnail is made in.
public enum ThumbnailFormat: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case webp = 0
    case jpeg = 1

    public var mimeType: String {
        switch self {
        case .webp: "image/webp"
        case .jpeg: "image/jpeg"
        }
    }

    public init?(mimeType: String) {
        switch mimeType {
        case "image/webp": self = .webp
        case "image/jpeg": self = .jpeg
        default: return nil
        }
    }

    /// The file name suffix in the filesystem storage.
    public var fileExtension: String {
        switch self {
        case .webp: "webp"
        case .jpeg: "jpg"
        }
    }

    public var description: String { fileExtension }
}

/// One thumbnail of an image: the largest side fits within `size`, in `format`.
public struct ThumbnailSpec: Sendable, Hashable, CustomStringConvertible {
    /// The sizes a client may ask for.
    public static let sizes = [128, 256, 512, 1024]
    /// The size an upload makes at once, in the background.
    public static let uploadSize = 256

    public let size: Int
    public let format: ThumbnailFormat

    public init(size: Int, format: ThumbnailFormat) {
        self.size = size
        self.format = format
    }

    public var description: String { "\(size).\(format)" }
}

/// What a grid paints before any byte of an image arrives.
public struct Placeholders: Sendable, Hashable {
    /// A BlurHash (https://blurha.sh) of the image.
    public let blurhash: String
    /// The most common colour, `#rrggbb` in lowercase hex.
    public let dominantColor: String

    public init(blurhash: String, dominantColor: String) {
        self.blurhash = blurhash
        self.dominantColor = dominantColor
    }
}

/// What a helper is asked to make from one original.
public struct ThumbnailJob: Sendable, Hashable {
    public var renditions: [ThumbnailSpec]
    /// Also compute the placeholders (from the smallest thumbnail).
    public var placeholders: Bool
    /// The largest `width × height` the helper may decode; checked from the header first.
    public var maxPixels: Int
    /// CPU seconds the helper may spend on this image before the kernel stops it (`SIGXCPU`).
    public var cpuSeconds: Int

    public init(renditions: [ThumbnailSpec], placeholders: Bool, maxPixels: Int, cpuSeconds: Int) {
        self.renditions = renditions
        self.placeholders = placeholders
        self.maxPixels = maxPixels
        self.cpuSeconds = cpuSeconds
    }
}

/// One encoded thumbnail.
public struct Rendition: Sendable, Hashable {
    public let spec: ThumbnailSpec
    public let width: Int
    public let height: Int
    public let bytes: [UInt8]

    public init(spec: ThumbnailSpec, width: Int, height: Int, bytes: [UInt8]) {
        self.spec = spec
        self.width = width
        self.height = height
        self.bytes = bytes
    }
}

/// A helper's answer to a job.
public enum ThumbnailOutcome: Sendable, Hashable {
    case made([Rendition], Placeholders?)
    /// The decoder refused the bytes (or they are over the pixel limit): a property of the file.
    case undecodable(String)
}

/// Every helper busy and the queue full, none free within the deadline, none could start, or
/// the pool is shutting down: try again later (`503`).
public struct ThumbnailsUnavailable: Error, Sendable, Hashable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { "thumbnails unavailable: \(reason)" }
}

/// WebP metadata chunks removed after encoding: libvips 8.14's WebP saver writes an `EXIF` chunk
/// (and `ICCP`) even when told to strip them.
public enum WebPMetadata {
    /// The file without `EXIF`, `ICCP` and `XMP ` chunks, with the `VP8X` flags that announce them
    /// cleared and the RIFF size fixed; the bytes unchanged if they are not a RIFF WebP.
    public static func strip(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WEBP".utf8) else { return bytes }
        var out = Array(bytes[0..<12])
        var offset = 12
        while offset + 8 <= bytes.count {
            let type = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let size = Int(bytes[offset + 4]) | Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]) << 16 | Int(bytes[offset + 7]) << 24
            let end = offset + 8 + size + (size & 1)
            guard end <= bytes.count else { return bytes }
            if !["EXIF", "ICCP", "XMP "].contains(type) {
                var chunk = Array(bytes[offset..<end])
                if type == "VP8X", chunk.count > 8 { chunk[8] &= ~(0x20 | 0x08 | 0x04) }
                out += chunk
            }
            offset = end
        }
        let riffSize = UInt32(out.count - 8)
        for index in 0..<4 { out[4 + index] = UInt8(riffSize >> (8 * UInt32(index)) & 0xFF) }
        return out
    }
}
