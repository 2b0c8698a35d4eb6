import FoundationEssentials
import Postgres
import Thumbnails

/// A stored thumbnail's row: its bytes when the database keeps them.
struct ThumbnailRow {
    let spec: ThumbnailSpec
    let byteSize: Int
    let sha256: [UInt8]
    let bytes: [UInt8]?
}

/// The SQL of thumbnails and placeholders; every value a bound parameter.
enum ThumbnailRepository {
    static func find(_ connection: PostgresConnection, id: UUID, spec: ThumbnailSpec) throws -> ThumbnailRow? {
        try connection.query(
            """
            SELECT byte_size, sha256, bytes FROM image_thumbnails
            WHERE image_id = \(id) AND size = \(Int32(spec.size)) AND content_type = \(spec.format.mimeType)
            """
        ).first.map { row in
            ThumbnailRow(
                spec: spec, byteSize: try row.decode(Int.self, column: "byte_size"), sha256: try row.decode([UInt8].self, column: "sha256"),
                bytes: try row.decode([UInt8]?.self, column: "bytes"))
        }
    }

    /// Every thumbnail row of an image (a move between storages rewrites them).
    static func all(_ connection: PostgresConnection, id: UUID) throws -> [ThumbnailRow] {
        try connection.query("SELECT size, content_type, byte_size, sha256, bytes FROM image_thumbnails WHERE image_id = \(id)")
            .compactMap { row in
                guard let format = ThumbnailFormat(mimeType: try row.decode(String.self, column: "content_type")) else { return nil }
                return ThumbnailRow(
                    spec: ThumbnailSpec(size: try row.decode(Int.self, column: "size"), format: format),
                    byteSize: try row.decode(Int.self, column: "byte_size"), sha256: try row.decode([UInt8].self, column: "sha256"),
                    bytes: try row.decode([UInt8]?.self, column: "bytes"))
            }
    }

    /// Locks the image's row against a move, a deletion and another instance storing its
    /// thumbnails, until the transaction ends; its storage, or nil if it is gone.
    static func lockImage(_ connection: PostgresConnection, id: UUID) throws -> ImageStorage? {
        try connection.query("SELECT storage FROM images WHERE id = \(id) FOR NO KEY UPDATE").first
            .flatMap { ImageStorage(rawValue: try $0.decode(String.self, at: 0)) }
    }

    static func insert(_ connection: PostgresConnection, id: UUID, _ rendition: Rendition, sha256: [UInt8], inDatabase: Bool) throws {
        let spec = rendition.spec
        if inDatabase {
            try connection.execute(
                """
                INSERT INTO image_thumbnails (image_id, size, content_type, width, height, byte_size, sha256, bytes)
                VALUES (\(id), \(Int32(spec.size)), \(spec.format.mimeType), \(Int32(rendition.width)), \(Int32(rendition.height)),
                        \(Int32(rendition.bytes.count)), \(sha256), \(rendition.bytes))
                ON CONFLICT DO NOTHING
                """)
        } else {
            try connection.execute(
                """
                INSERT INTO image_thumbnails (image_id, size, content_type, width, height, byte_size, sha256)
                VALUES (\(id), \(Int32(spec.size)), \(spec.format.mimeType), \(Int32(rendition.width)), \(Int32(rendition.height)),
                        \(Int32(rendition.bytes.count)), \(sha256))
                ON CONFLICT DO NOTHING
                """)
        }
    }

    /// Moves a thumbnail's bytes into its row (`bytes`), or out of it (nil: a file holds them).
    static func setBytes(_ connection: PostgresConnection, id: UUID, spec: ThumbnailSpec, bytes: [UInt8]?) throws {
        try connection.execute(
            """
            UPDATE image_thumbnails SET bytes = \(bytes)
            WHERE image_id = \(id) AND size = \(Int32(spec.size)) AND content_type = \(spec.format.mimeType)
            """)
    }

    static func delete(_ connection: PostgresConnection, id: UUID, spec: ThumbnailSpec) throws {
        try connection.execute(
            "DELETE FROM image_thumbnails WHERE image_id = \(id) AND size = \(Int32(spec.size)) AND content_type = \(spec.format.mimeType)")
    }

    static func setPlaceholders(_ connection: PostgresConnection, id: UUID, _ placeholders: Placeholders) throws {
        try connection.execute(
            """
            UPDATE images SET blurhash = \(placeholders.blurhash), dominant_color = \(placeholders.dominantColor)
            WHERE id = \(id) AND blurhash IS NULL
            """)
    }

    static func setError(_ connection: PostgresConnection, id: UUID, _ reason: String) throws {
        try connection.execute("UPDATE images SET thumbnail_error = \(String(reason.prefix(500))) WHERE id = \(id)")
    }

    /// The thumbnail file names of filesystem images whose id starts with the byte `prefix`.
    static func filesystemNames(_ connection: PostgresConnection, prefix: UInt8) throws -> Set<String> {
        let low = UUID(uuid: (prefix, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        let high = UUID(uuid: (prefix, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF))
        let rows = try connection.query(
            """
            SELECT t.image_id, t.size, t.content_type FROM image_thumbnails t JOIN images i ON i.id = t.image_id
            WHERE t.image_id BETWEEN \(low) AND \(high) AND i.storage = 'filesystem'
            """)
        return Set(
            try rows.compactMap { row in
                guard let format = ThumbnailFormat(mimeType: try row.decode(String.self, column: "content_type")) else { return nil }
                return ImageDirectory.thumbnailName(
                    of: try row.decode(UUID.self, column: "image_id"), ThumbnailSpec(size: try row.decode(Int.self, column: "size"), format: format))
            })
    }
}
