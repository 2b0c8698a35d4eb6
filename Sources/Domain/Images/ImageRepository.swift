import FoundationEssentials
import Postgres
import Cryptography

/// The SQL of images; every value a bound parameter.
enum ImageRepository {
    /// What an image row is selected and read by.
    static let columns = SQLColumns([
        "id": "i.id", "user_id": "i.user_id", "content_type": "i.content_type", "byte_size": "i.byte_size", "sha256": "i.sha256",
        "width": "i.width", "height": "i.height", "storage": "i.storage",
        "created_micros": "(extract(epoch FROM i.created_at) * 1000000)::int8", "blurhash": "i.blurhash",
        "dominant_color": "i.dominant_color", "thumbnail_error": "i.thumbnail_error",
    ])

    static func decode(_ row: PostgresRow) throws -> StoredImage {
        let contentType = try row.decode(String.self, "content_type", of: columns)
        let storage = try row.decode(String.self, "storage", of: columns)
        guard let format = ImageFormat(mimeType: contentType), let place = ImageStorage(rawValue: storage) else {
            throw PostgresError(code: .decodingFailed, context: "image row with content type \(contentType), storage \(storage)")
        }
        return StoredImage(
            id: try row.decode(UUID.self, "id", of: columns), userID: try row.decode(UUID.self, "user_id", of: columns), format: format,
            byteSize: try row.decode(Int.self, "byte_size", of: columns), sha256: try row.decode([UInt8].self, "sha256", of: columns),
            width: try row.decode(Int.self, "width", of: columns), height: try row.decode(Int.self, "height", of: columns),
            storage: place, createdAtMicroseconds: try row.decode(Int64.self, "created_micros", of: columns),
            blurhash: try row.decode(String?.self, "blurhash", of: columns),
            dominantColor: try row.decode(String?.self, "dominant_color", of: columns),
            thumbnailError: try row.decode(String?.self, "thumbnail_error", of: columns))
    }

    static func insert(
        _ connection: PostgresConnection, id: UUID, userID: UUID, info: ImageInfo, byteSize: Int,
        sha256: [UInt8], storage: ImageStorage
    ) throws -> StoredImage {
        let rows = try connection.query(
            """
            INSERT INTO images AS i (id, user_id, content_type, byte_size, sha256, width, height, storage)
            VALUES (\(id), \(userID), \(info.format.mimeType), \(byteSize), \(sha256), \(info.width), \(info.height),
                    \(storage.rawValue))
            RETURNING \(columns)
            """)
        return try decode(rows[0])
    }

    /// Makes a user's uploads take turns until the transaction ends (an advisory lock: profile
    /// writes, which lock the user's row, are not held up).
    static func lockUploads(_ connection: PostgresConnection, userID: UUID) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtextextended('exosphere.uploads.' || \(userID)::text, 0))")
    }

    /// Counts an upload on the user's hourly throttle (`exo_throttle_acquire`, migration 0003);
    /// nil when it is allowed, else the seconds until it would be.
    static func countUpload(_ connection: PostgresConnection, userID: UUID, limit: Int) throws -> Int? {
        let wait = try connection.query(
            """
            SELECT exo_throttle_acquire(ARRAY[\("upload:user:" + userID.uuidString.lowercased())]::text[], ARRAY[\(limit)]::integer[],
                                        ARRAY[3600]::double precision[])
            """)[0].decode(Int32.self, at: 0)
        return wait > 0 ? Int(wait) : nil
    }

    /// The bytes of the user's originals.
    static func storedBytes(_ connection: PostgresConnection, userID: UUID) throws -> Int {
        try connection.query("SELECT COALESCE(sum(byte_size), 0)::bigint FROM images WHERE user_id = \(userID)")[0].decode(Int.self, at: 0)
    }

    /// `COPY` streams the bytes to the server without a second copy in this process.
    static func insertData(_ connection: PostgresConnection, id: UUID, bytes: UnsafeRawBufferPointer) throws {
        try connection.copyIn("COPY image_data (image_id, bytes) FROM STDIN (FORMAT binary)") { writer in
            writer.beginRow(fields: 2)
            writer.uuid(id)
            try writer.bytes(bytes)
        }
    }

    static func find(_ connection: PostgresConnection, id: UUID, userID: UUID) throws -> StoredImage? {
        try connection.query("SELECT \(columns) FROM images i WHERE i.id = \(id) AND i.user_id = \(userID)")
            .first.map(decode)
    }

    /// Any user's image: for a URL whose signature already proved it was handed out.
    static func find(_ connection: PostgresConnection, id: UUID) throws -> StoredImage? {
        try connection.query("SELECT \(columns) FROM images i WHERE i.id = \(id)").first.map(decode)
    }

    /// Locks the row for a move between storages; nil if the image is gone or no longer in `storage`.
    static func lockForMove(_ connection: PostgresConnection, id: UUID, storage: ImageStorage) throws -> StoredImage? {
        try connection.query(
            """
            SELECT \(columns) FROM images i WHERE i.id = \(id) AND i.storage = \(storage.rawValue) FOR UPDATE
            """
        ).first.map(decode)
    }

    /// `length` bytes from `offset` (0-based) of a database-stored image; nil if it has no data row (any more).
    static func data(_ connection: PostgresConnection, id: UUID, offset: Int, length: Int) throws -> [UInt8]? {
        try connection.fetchBytes(
            """
            SELECT substring(d.bytes FROM \(Int32(offset + 1)) FOR \(Int32(length))) FROM image_data d WHERE d.image_id = \(id)
            """)
    }

    static func page(
        _ connection: PostgresConnection, userID: UUID, order: ImageOrder, after cursor: KeysetCursor?, limit: Int
    ) throws -> [StoredImage] {
        try connection.query(pageQuery(userID: userID, order: order, after: cursor, limit: limit)).map(decode)
    }

    /// A page of a user's images in `order`, after `cursor`: keyset paging on `(created_at, id)`,
    /// which `images_user_created` serves either way (scanned backwards for the newest first).
    static func pageQuery(userID: UUID, order: ImageOrder, after cursor: KeysetCursor?, limit: Int) -> PostgresQuery {
        switch (order, cursor) {
        case (.oldest, nil):
            "SELECT \(columns) FROM images i WHERE i.user_id = \(userID) ORDER BY i.created_at, i.id LIMIT \(limit)"
        case (.newest, nil):
            "SELECT \(columns) FROM images i WHERE i.user_id = \(userID) ORDER BY i.created_at DESC, i.id DESC LIMIT \(limit)"
        // Microseconds are added as an integer interval: exact, unlike a float epoch.
        case (.oldest, let cursor?):
            """
            SELECT \(columns) FROM images i
            WHERE i.user_id = \(userID)
              AND (i.created_at, i.id) > ('epoch'::timestamptz + \(cursor.microseconds) * interval '1 microsecond', \(cursor.id))
            ORDER BY i.created_at, i.id
            LIMIT \(limit)
            """
        case (.newest, let cursor?):
            """
            SELECT \(columns) FROM images i
            WHERE i.user_id = \(userID)
              AND (i.created_at, i.id) < ('epoch'::timestamptz + \(cursor.microseconds) * interval '1 microsecond', \(cursor.id))
            ORDER BY i.created_at DESC, i.id DESC
            LIMIT \(limit)
            """
        }
    }

    /// Deletes one image; its storage if it existed (the caller removes a file after the commit).
    static func delete(_ connection: PostgresConnection, id: UUID, userID: UUID) throws -> ImageStorage? {
        try connection.query("DELETE FROM images WHERE id = \(id) AND user_id = \(userID) RETURNING storage")
            .first.flatMap { ImageStorage(rawValue: try $0.decode(String.self, at: 0)) }
    }

    /// Deletes every image of a user; the id and storage of each.
    static func deleteAll(_ connection: PostgresConnection, userID: UUID) throws -> [(id: UUID, storage: ImageStorage)] {
        try connection.query("DELETE FROM images WHERE user_id = \(userID) RETURNING id, storage")
            .compactMap { row in
                guard let storage = ImageStorage(rawValue: try row.decode(String.self, column: "storage")) else { return nil }
                return (try row.decode(UUID.self, column: "id"), storage)
            }
    }

    static func markMoved(_ connection: PostgresConnection, id: UUID, to storage: ImageStorage) throws {
        try connection.execute("UPDATE images SET storage = \(storage.rawValue) WHERE id = \(id)")
        if storage != .database {
            try connection.execute("DELETE FROM image_data WHERE image_id = \(id)")
        }
    }

    /// The next images still in `storage`, oldest first.
    static func pending(_ connection: PostgresConnection, in storage: ImageStorage, limit: Int) throws -> [UUID] {
        try connection.query(
            """
            SELECT id FROM images WHERE storage = \(storage.rawValue) ORDER BY created_at, id LIMIT \(limit)
            """
        ).map { try $0.decode(UUID.self, at: 0) }
    }

    static func count(_ connection: PostgresConnection, in storage: ImageStorage) throws -> Int {
        try connection.query("SELECT count(*) FROM images WHERE storage = \(storage.rawValue)")[0].decode(Int.self, at: 0)
    }

    /// The ids of filesystem images whose id starts with the byte `prefix`.
    static func filesystemIDs(_ connection: PostgresConnection, prefix: UInt8) throws -> Set<UUID> {
        let low = UUID(uuid: (prefix, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        let rows: PostgresRows
        if prefix == 0xFF {
            rows = try connection.query("SELECT id FROM images WHERE id >= \(low) AND storage = 'filesystem'")
        } else {
            let high = UUID(uuid: (prefix + 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
            rows = try connection.query("SELECT id FROM images WHERE id >= \(low) AND id < \(high) AND storage = 'filesystem'")
        }
        return Set(try rows.map { try $0.decode(UUID.self, at: 0) })
    }

    /// Serialises publishing a file (shared) with sweeping its directory (exclusive), across every
    /// instance on the database, until the transaction ends.
    static func lockDirectory(_ connection: PostgresConnection, prefix: UInt8, exclusive: Bool) throws {
        if exclusive {
            try connection.execute("SELECT pg_advisory_xact_lock(\(lockClass), \(Int32(prefix)))")
        } else {
            try connection.execute("SELECT pg_advisory_xact_lock_shared(\(lockClass), \(Int32(prefix)))")
        }
    }

    /// The first key of the image directory locks ("EXOI").
    static let lockClass: Int32 = 0x4558_4F49

    /// Images and their bytes per storage, for `/metrics`.
    static func totals(_ connection: PostgresConnection) throws -> [ImageStorage: (count: Int, bytes: Int)] {
        var totals: [ImageStorage: (count: Int, bytes: Int)] = [:]
        let rows = try connection.query("SELECT storage, count(*) AS count, coalesce(sum(byte_size), 0)::int8 AS bytes FROM images GROUP BY storage")
        for row in rows {
            if let storage = ImageStorage(rawValue: try row.decode(String.self, column: "storage")) {
                totals[storage] = (try row.decode(Int.self, column: "count"), try row.decode(Int.self, column: "bytes"))
            }
        }
        return totals
    }
}
