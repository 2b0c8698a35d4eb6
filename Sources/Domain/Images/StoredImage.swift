import FoundationEssentials
import Cryptography

/// The order of a user's image list (`?order=`): by `(createdAt, id)`, the oldest first (the
/// default) or the newest first.
public enum ImageOrder: String, Sendable, CaseIterable {
    case oldest
    case newest
}

/// Where an image's bytes are kept.
public enum ImageStorage: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A `bytea` row of `image_data`, committed with the metadata.
    case database
    /// A file under the image directory named after the image's id.
    case filesystem
    /// An object in an S3-compatible store, named after the image's id (`--s3-*`).
    case s3

    public var description: String { rawValue }
}

/// An image's metadata as stored: what the API lists and what a download needs to find the bytes.
public struct StoredImage: Sendable, Hashable {
    public let id: UUID
    public let userID: UUID
    public let format: ImageFormat
    public let byteSize: Int
    /// SHA-256 of the bytes; also the entity tag.
    public let sha256: [UInt8]
    public let width: Int
    public let height: Int
    public let storage: ImageStorage
    /// Microseconds since the Unix epoch, exactly as PostgreSQL keeps it (the cursor needs exactness).
    public let createdAtMicroseconds: Int64
    /// The placeholders, once a helper has decoded the image; nil before, or if it cannot be.
    public let blurhash: String?
    public let dominantColor: String?
    /// Why no thumbnail can be made, once a helper found out.
    public let thumbnailError: String?

    public init(
        id: UUID, userID: UUID, format: ImageFormat, byteSize: Int, sha256: [UInt8], width: Int, height: Int,
        storage: ImageStorage, createdAtMicroseconds: Int64, blurhash: String? = nil, dominantColor: String? = nil,
        thumbnailError: String? = nil
    ) {
        self.id = id
        self.userID = userID
        self.format = format
        self.byteSize = byteSize
        self.sha256 = sha256
        self.width = width
        self.height = height
        self.storage = storage
        self.createdAtMicroseconds = createdAtMicroseconds
        self.blurhash = blurhash
        self.dominantColor = dominantColor
        self.thumbnailError = thumbnailError
    }

    /// The lowercase hex of `sha256`.
    public var sha256Hex: String { Hex.encode(sha256) }

    /// The strong entity tag: the quoted hex SHA-256, identical for identical bytes in either storage.
    public var etag: String { "\"" + sha256Hex + "\"" }
}

/// One page of a user's images, oldest first.
public struct ImagePage: Sendable {
    public let images: [StoredImage]
    /// The cursor of the next page; nil on the last page.
    public let next: KeysetCursor?
}
