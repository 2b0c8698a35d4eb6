import Foundation

/// The metadata of one of the user's images. (Not `Image`, which SwiftUI has.)
public struct UserImage: Identifiable, Hashable, Sendable {
    /// Opaque; do not parse.
    public let id: String
    /// The format the server checked the bytes to be.
    public let contentType: ImageContentType
    /// The size of the image in bytes.
    public let byteSize: Int
    /// The lowercase hex SHA-256 of the bytes.
    public let sha256: String
    /// In pixels, as encoded (before EXIF orientation is applied).
    public let width: Int
    /// In pixels, as encoded (before EXIF orientation is applied).
    public let height: Int
    /// When it was uploaded.
    public let createdAt: Date
    /// The download's path relative to the base URL (`/users/me/images/{id}`); it needs the
    /// bearer token: download with `Exosphere.downloadImage(_:)`.
    public let path: String
    /// A path and query that serves the bytes without a token until it expires (an hour by
    /// default), for `AsyncImage` or a web view: `Exosphere.signedURL(for:)` makes it absolute.
    /// Nil from a server that does not sign URLs. Not part of equality: every response signs anew.
    public let signedPath: String?
    /// A signed path per thumbnail size (`ThumbnailSize.rawValue`), with `signedPath`'s expiry:
    /// each serves that thumbnail only (the size is signed). Empty from a server that does not
    /// sign them. Not part of equality either.
    public let signedThumbnailPaths: [Int: String]
    /// A BlurHash (https://blurha.sh) to paint while the bytes load: decode it with any BlurHash
    /// library. Nil until the server has decoded the image (a moment after the upload), and for
    /// good if it cannot.
    public let blurhash: String?
    /// The image's most common colour, `#rrggbb`; nil like `blurhash`.
    public let dominantColor: String?

    init(json: JSONValue) throws {
        guard let id = json["id"]?.stringValue, let contentType = json["contentType"]?.stringValue,
            let byteSize = json["byteSize"]?.intValue, let sha256 = json["sha256"]?.stringValue,
            let width = json["width"]?.intValue, let height = json["height"]?.intValue,
            let createdAt = json["createdAt"]?.stringValue.flatMap(Timestamp.parse)
        else {
            throw ExosphereError.invalidResponse("image metadata without id, type, size or dimensions")
        }
        self.id = id
        self.contentType = ImageContentType(rawValue: contentType)
        self.byteSize = byteSize
        self.sha256 = sha256
        self.width = width
        self.height = height
        self.createdAt = createdAt
        self.path = json["url"]?.stringValue ?? "/users/me/images/\(id)"
        self.signedPath = json["signedUrl"]?.stringValue
        var thumbnails: [Int: String] = [:]
        for (size, path) in json["signedThumbnails"]?.objectValue ?? [:] {
            if let size = Int(size), let path = path.stringValue { thumbnails[size] = path }
        }
        self.signedThumbnailPaths = thumbnails
        self.blurhash = json["blurhash"]?.stringValue
        self.dominantColor = json["dominantColor"]?.stringValue
    }

    /// Equal when every field but the signed paths and the placeholders is (those change between
    /// responses for the same image).
    public static func == (a: UserImage, b: UserImage) -> Bool {
        (a.id, a.contentType, a.byteSize, a.sha256) == (b.id, b.contentType, b.byteSize, b.sha256)
            && (a.width, a.height, a.createdAt, a.path) == (b.width, b.height, b.createdAt, b.path)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(sha256)
    }
}

/// An image format the server accepts, as its media type.
public struct ImageContentType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The media type: `image/jpeg`.
    public let rawValue: String

    /// The media type `rawValue` (the server accepts the five below; others are `415`).
    public init(rawValue: String) { self.rawValue = rawValue }

    /// `image/jpeg`.
    public static let jpeg = ImageContentType(rawValue: "image/jpeg")
    /// `image/png`.
    public static let png = ImageContentType(rawValue: "image/png")
    /// `image/gif`.
    public static let gif = ImageContentType(rawValue: "image/gif")
    /// `image/webp`.
    public static let webp = ImageContentType(rawValue: "image/webp")
    /// `image/heic`.
    public static let heic = ImageContentType(rawValue: "image/heic")

    /// The type a file's extension names (`jpg`, `jpeg`, `png`, `gif`, `webp`, `heic`), or nil.
    public init?(fileExtension: String) {
        switch fileExtension.lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "gif": self = .gif
        case "webp": self = .webp
        case "heic", "heif": self = .heic
        default: return nil
        }
    }

    /// `rawValue`.
    public var description: String { rawValue }
}

/// The box a thumbnail fits in, in pixels: the sizes the server makes.
public struct ThumbnailSize: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int
    /// One of 128, 256, 512 or 1024; nil for any other.
    public init?(rawValue: Int) {
        guard [128, 256, 512, 1024].contains(rawValue) else { return nil }
        self.rawValue = rawValue
    }
    private init(_ value: Int) { rawValue = value }

    /// 128 pixels.
    public static let small = ThumbnailSize(128)
    /// 256 pixels: the grid cell size the server makes at upload.
    public static let medium = ThumbnailSize(256)
    /// 512 pixels.
    public static let large = ThumbnailSize(512)
    /// 1024 pixels.
    public static let extraLarge = ThumbnailSize(1024)
    static let all: [ThumbnailSize] = [.small, .medium, .large, .extraLarge]
}

/// The order of `Exosphere.images(order:)` and `Exosphere.imagePage(order:after:limit:)`: the
/// server pages either way, so each page is fetched as the sequence reaches it.
public enum ImageOrder: Sendable, Hashable {
    /// Upload order.
    case oldestFirst
    /// Newest upload first, as a photo grid shows them.
    case newestFirst

    /// The server's `order` value.
    var queryValue: String {
        switch self {
        case .oldestFirst: "oldest"
        case .newestFirst: "newest"
        }
    }
}

/// How far an upload has got.
public struct UploadProgress: Hashable, Sendable {
    /// Bytes of the body sent so far.
    public let sentBytes: Int64
    /// The size of the body.
    public let totalBytes: Int64

    /// From 0 to 1.
    public var fractionCompleted: Double { totalBytes > 0 ? min(1, Double(sentBytes) / Double(totalBytes)) : 0 }
}

/// How `Exosphere.downloadImage(_:cachePolicy:)` uses the disk cache.
public enum ImageCachePolicy: Sendable, Hashable {
    /// A cached copy is revalidated with `If-None-Match`: `304` (no body sent) returns it, and an
    /// image deleted meanwhile is `image_not_found`. The default.
    case revalidate
    /// A cached copy is returned without asking the server (images never change behind an id).
    case returnCacheDataElseLoad
    /// The cache is neither read nor written.
    case ignoreCache
}
