import Files
import FoundationEssentials
import ObjectStorage
import StructuredLogging
import Postgres
import Cryptography
import Synchronization
import Threads
import Thumbnails

/// Users' images: validation, the three storages behind one interface, listing, deletion, the
/// start-up sweep and the move between storages.
///
/// Filesystem writes follow one order so that a crash at any point leaves no row without its
/// file: temporary file → fsync → rename to the final name → fsync of the directory → commit.
/// A crash after the rename leaves a file without a row, which `sweep` removes. Deletion removes
/// the row, then the file. The object storage's order is in `ImageService+ObjectStorage`.
public final class ImageService: Sendable {
    public struct Configuration: Sendable {
        /// Where new images go.
        public var storage: ImageStorage = .database
        /// The filesystem storage's directory.
        public var directory = "./.exosphere/images"
        /// The largest image, in bytes.
        public var maxBytes = 10 << 20
        /// Uploads one user may make in an hour (0: no limit).
        public var uploadsPerHour = 200
        /// The bytes of originals one user may keep (0: no limit).
        public var quotaBytes = 1 << 30
        /// How long `/metrics` reuses its count of images and bytes (a count reads every row).
        public var totalsMaxAgeSeconds: Double = 60
        /// Pixel limits, checked from the headers.
        public var limits = ImageLimits()
        /// Temporary files older than this are leftovers of a crash and are swept.
        public var temporaryFileGraceSeconds = 3600
        /// The memory that keeps recently served thumbnails, in bytes.
        public var thumbnailCacheBytes = 64 << 20
        /// The object store of the `s3` storage (`--s3-endpoint`, `--s3-bucket`…), if one is configured.
        public var s3: S3Configuration?
        /// Put before every object key (`--s3-prefix`), such as `exosphere/images/`.
        public var s3Prefix = ""
        /// Signed image URLs answer `302` to a presigned GET on the store (`--s3-redirect`).
        public var s3Redirect = false
        /// How long an object without a row is left alone: an upload's row may still be about to commit.
        public var orphanObjectGraceSeconds = 3600
        /// How often each instance lists the bucket for objects without a row (`sweepObjectsIfDue`).
        public var objectSweepIntervalSeconds = 3600

        public init() {}
    }

    /// What a download sends: bytes in memory (a small part of the database storage or of an
    /// object), the first chunk of a larger one whose rest is read with `readChunk` as the client
    /// takes it, a region of an open file, or an object as the store sends it.
    public enum Content: Sendable {
        case bytes([UInt8])
        case chunks(first: [UInt8], id: UUID, offset: Int, length: Int)
        case file(ReadableFile, offset: Int, length: Int)
        /// An object as the store sends it (`readChunk(of:)`), its head read.
        case object(S3ObjectStream)
    }

    /// Bytes of a database-stored image are read in chunks of this size: a download holds at most
    /// one in memory however slowly its client reads.
    public static let chunkSize = 256 * 1024

    public let configuration: Configuration
    let pool: PostgresPool
    /// The last `totals` and when they were counted (monotonic nanoseconds).
    private let cachedTotals = Mutex<(totals: [ImageStorage: (count: Int, bytes: Int)], at: UInt64)?>(nil)
    /// Threads that read the chunks of downloads from the database storage (`readChunk`),
    /// started on the first such download; nil once shut down.
    private let readers = Mutex<(pool: BoundedThreadPool?, stopped: Bool)>((nil, false))
    /// Written chunks of object downloads, to be filled again (`recycle`).
    private let chunkBuffers = Mutex<[[UInt8]]>([])
    /// When this instance last listed the bucket for orphan objects (seconds since 1970).
    let lastObjectSweep = Mutex<Int?>(nil)
    let directory: ImageDirectory
    let logger: Logger
    /// The helper processes that decode images; nil makes no thumbnails (`unavailable`).
    public let thumbnailer: ThumbnailerPool?
    let thumbnailCache: ThumbnailCache
    /// The images whose thumbnails a thread of this process is making (`oneAtATime`).
    let making = ConditionLock()
    nonisolated(unsafe) var makingIDs: Set<UUID> = []
    /// The threads that make each upload's first thumbnail; nil once shut down.
    let preparers: Mutex<(pool: BoundedThreadPool?, Void)>
    /// The upload bytes held for thumbnails waiting to be made (`prepareThumbnails`).
    let preparedBytes = Mutex(0)
    /// The client of `configuration.s3`; nil when none is configured, or when it cannot work
    /// (`objectStoreFailure` says why, and `prepare` throws it).
    public let objectStore: S3Client?
    let objectStoreFailure: S3Error?

    public init(pool: PostgresPool, configuration: Configuration, logger: Logger, thumbnailer: ThumbnailerPool? = nil) {
        self.pool = pool
        self.configuration = configuration
        self.directory = ImageDirectory(root: configuration.directory)
        self.logger = logger
        self.thumbnailer = thumbnailer
        self.thumbnailCache = ThumbnailCache(capacityBytes: configuration.thumbnailCacheBytes)
        var objectStoreFailure: S3Error?
        do throws(S3Error) {
            objectStore = try configuration.s3.map { (s3) throws(S3Error) in try S3Client(s3) }
        } catch {
            objectStore = nil
            objectStoreFailure = error
        }
        self.objectStoreFailure = objectStoreFailure
        self.preparers = Mutex(
            // One helper fewer than there are: a request for a thumbnail always finds one that no
            // background work holds.
            (thumbnailer.map { BoundedThreadPool(name: "thumbnail-prep", threads: max(1, $0.configuration.helpers - 1), queueLimit: 1024) }, ()))
    }

    /// Stops the threads that read download chunks, after the chunks asked for, and those that
    /// prepare thumbnails, after the image each is on.
    public func shutdown() {
        let pool = readers.withLock { readers -> BoundedThreadPool? in
            readers.stopped = true
            return readers.pool
        }
        pool?.shutdown()
        preparers.withLock { preparers -> BoundedThreadPool? in
            defer { preparers.pool = nil }
            return preparers.pool
        }?.shutdown()
    }

    /// Creates the directory layout when the filesystem storage is in use, and the bucket when the
    /// object storage is (a store that cannot be reached fails the start).
    public func prepare() throws {
        if configuration.storage == .filesystem { try directory.prepare() }
        if let objectStoreFailure { throw objectStoreFailure }
        if configuration.storage == .s3 {
            guard let objectStore else { throw S3Error(.invalidConfiguration, "--image-storage s3 needs --s3-endpoint and --s3-bucket") }
            do throws(S3Error) {
                try objectStore.createBucketIfMissing()
            } catch  where error.isTransient {
                // A store down at start-up: the server serves, uploads answer 503 and /readyz says why.
                logger.warning("the image store cannot be reached; uploads wait for it", ["error": String(reflecting: error)])
            }
        }
    }

    // MARK: - Upload

    /// Validates and stores an upload; returns it once committed.
    public func upload(_ bytes: UnsafeRawBufferPointer, declared: ImageFormat, userID: UUID) throws -> StoredImage {
        guard !bytes.isEmpty else { throw ImageError(.empty, "The image has no bytes.") }
        guard bytes.count <= configuration.maxBytes else {
            throw ImageError(.tooLarge, "The image is \(bytes.count) bytes; at most \(configuration.maxBytes) are allowed.")
        }
        let info = try ImageInspector.inspect(bytes, declared: declared, limits: configuration.limits).get()
        let digest = SHA256.hash(bytes)
        let id = UUID()
        switch configuration.storage {
        case .database:
            return try pool.withTransaction { connection in
                try admit(bytes.count, of: userID, connection)
                let image = try ImageRepository.insert(
                    connection, id: id, userID: userID, info: info, byteSize: bytes.count,
                    sha256: digest, storage: .database)
                try ImageRepository.insertData(connection, id: id, bytes: bytes)
                return image
            }
        case .s3:
            // The object first, confirmed by the store (checksums), then the row: a row never points
            // at a missing object, and no database connection waits on the store. An object whose
            // row surely did not commit (refused by the limits, or the INSERT failed) is removed
            // here; one whose COMMIT failed may have a row, so it stays, and `sweepObjects` removes
            // it later if it has none.
            let key = objectKey(id)
            try withObjectStore { store throws(S3Error) in
                try store.putObject(key, Array(bytes), contentType: info.format.mimeType, sha256: digest)
            }
            var rolledBack = false
            do {
                return try pool.withTransaction { connection in
                    do {
                        try admit(bytes.count, of: userID, connection)
                        return try ImageRepository.insert(
                            connection, id: id, userID: userID, info: info, byteSize: bytes.count, sha256: digest, storage: .s3)
                    } catch {
                        rolledBack = true
                        throw error
                    }
                }
            } catch {
                if rolledBack, let store = objectStore {
                    do throws(S3Error) { try store.deleteObject(key) } catch {
                        logger.warning("could not remove the object of a failed upload", ["object.key": key, "error": String(reflecting: error)])
                    }
                }
                throw error
            }
        case .filesystem:
            let temporary = try directory.writeTemporary(bytes, for: id)
            var published = false
            var rolledBack = false
            defer {
                if !published { _ = try? FileSystem.remove(temporary) }
            }
            do {
                return try pool.withTransaction { connection in
                    try admit(bytes.count, of: userID, connection)
                    try ImageRepository.lockDirectory(connection, prefix: ImageDirectory.prefix(of: id), exclusive: false)
                    if !published {
                        try directory.publish(temporary, as: id)
                        published = true
                    }
                    do {
                        return try ImageRepository.insert(
                            connection, id: id, userID: userID, info: info, byteSize: bytes.count,
                            sha256: digest, storage: .filesystem)
                    } catch {
                        rolledBack = true
                        throw error
                    }
                }
            } catch {
                // Only when the INSERT itself failed is the row surely absent; after a failed
                // COMMIT it may exist, so the file stays (the sweep removes it if it is an orphan).
                if published, rolledBack { _ = try? directory.remove(id) }
                throw error
            }
        }
    }

    /// The user's limits, in the upload's transaction: uploads an hour (counted only when the
    /// upload commits) and bytes kept. The user's uploads take turns here, so that two at once
    /// cannot both fit in the room left for one.
    private func admit(_ byteSize: Int, of userID: UUID, _ connection: PostgresConnection) throws {
        guard configuration.uploadsPerHour > 0 || configuration.quotaBytes > 0 else { return }
        try ImageRepository.lockUploads(connection, userID: userID)
        if configuration.uploadsPerHour > 0,
            let wait = try ImageRepository.countUpload(connection, userID: userID, limit: configuration.uploadsPerHour)
        {
            throw ImageError(
                .tooManyUploads, "At most \(configuration.uploadsPerHour) uploads an hour; try again later.", retryAfterSeconds: wait)
        }
        if configuration.quotaBytes > 0 {
            let stored = try ImageRepository.storedBytes(connection, userID: userID)
            if stored + byteSize > configuration.quotaBytes {
                throw ImageError(
                    .quotaExceeded,
                    "The user's images take \(stored) bytes; this one (\(byteSize)) would pass the quota of \(configuration.quotaBytes). Delete some first."
                )
            }
        }
    }

    // MARK: - Reading

    /// A page of the user's images in `order`; `next` continues in the same order.
    public func list(userID: UUID, order: ImageOrder = .oldest, after cursor: KeysetCursor?, limit: Int) throws -> ImagePage {
        let rows = try pool.withConnection { try ImageRepository.page($0, userID: userID, order: order, after: cursor, limit: limit + 1) }
        let images = Array(rows.prefix(limit))
        return ImagePage(
            images: images, next: rows.count > limit ? images.last.map { KeysetCursor(microseconds: $0.createdAtMicroseconds, id: $0.id) } : nil)
    }

    /// The metadata of one of the user's images; `image_not_found` for anyone else's.
    public func find(_ id: UUID, userID: UUID) throws -> StoredImage {
        guard let image = try pool.withConnection({ try ImageRepository.find($0, id: id, userID: userID) }) else {
            throw ImageError.notFound
        }
        return image
    }

    /// `find`, and for a download of the whole image from the object store its bytes too: the
    /// store's `GET` goes out first and the row is read while the store works, so that the first
    /// byte comes a database round trip sooner. `content` is nil when the image is kept elsewhere,
    /// or the store did not have it (moved meanwhile): `content(of:)` then reads it as usual. Not
    /// while the store's last request failed: an image kept elsewhere would wait for a store that
    /// is down (its connect timeout) before it is served.
    public func find(_ id: UUID, userID: UUID, openingWhole: Bool) throws -> (image: StoredImage, content: Content?) {
        guard openingWhole, configuration.storage == .s3, let store = objectStore, !store.statistics.lastFailed else {
            return (try find(id, userID: userID), nil)
        }
        var row: Result<StoredImage?, any Error>?
        let opened: Result<S3ObjectStream, S3Error>
        do throws(S3Error) {
            opened = .success(
                try store.openObject(objectKey(id)) { [pool] in
                    row = Result { try pool.withConnection { try ImageRepository.find($0, id: id, userID: userID) } }
                })
        } catch {
            opened = .failure(error)
        }
        // No connection to the store: the row decides whether it was needed.
        guard let image = try (row ?? Result { try find(id, userID: userID) }).get() else { throw ImageError.notFound }
        guard image.storage == .s3 else { return (image, nil) }
        switch opened {
        case .success(let stream):
            guard stream.length == image.byteSize else { return (image, nil) }
            return (image, try content(of: stream, length: image.byteSize))
        case .failure(let error) where error.code == .notFound:
            return (image, nil)
        case .failure(let error):
            throw Self.translated(error)
        }
    }

    /// The metadata of an image whatever its owner, for a signed URL (checked by the caller).
    public func find(signed id: UUID) throws -> StoredImage {
        guard let image = try pool.withConnection({ try ImageRepository.find($0, id: id) }) else { throw ImageError.notFound }
        return image
    }

    /// The bytes `offset..<offset+length` of an image found by `find`. A move between storages
    /// may happen in between: then the metadata is read again once.
    public func content(of image: StoredImage, offset: Int, length: Int) throws -> Content {
        var image = image
        for attempt in 0..<2 {
            switch image.storage {
            case .database:
                let first = min(length, ImageService.chunkSize)
                if let bytes = try pool.withConnection({ try ImageRepository.data($0, id: image.id, offset: offset, length: first) }) {
                    guard bytes.count == first else {
                        throw ImageStoreCorruption("image \(image.id) has \(bytes.count) bytes at \(offset), expected \(first)")
                    }
                    return first == length ? .bytes(bytes) : .chunks(first: bytes, id: image.id, offset: offset, length: length)
                }
            case .filesystem:
                do {
                    let file = try ReadableFile(path: directory.path(of: image.id))
                    guard file.size == image.byteSize else {
                        throw ImageStoreCorruption("the file of image \(image.id) has \(file.size) bytes, expected \(image.byteSize)")
                    }
                    return .file(file, offset: offset, length: length)
                } catch let error as FileSystemError where error.isNotFound && attempt == 0 {
                    // Moved to the database, or deleted, since the metadata was read.
                }
            case .s3:
                let store = try requireObjectStore()
                let stream: S3ObjectStream?
                do throws(S3Error) {
                    // The whole object without a Range: the store may then serve it at its fastest.
                    let range = offset == 0 && length == image.byteSize ? nil : offset...(offset + length - 1)
                    stream = try store.openObject(objectKey(image.id), range: range)
                } catch  where error.code == .notFound && attempt == 0 {
                    stream = nil  // Moved, or deleted, since the metadata was read.
                } catch {
                    throw Self.translated(error)
                }
                if let stream {
                    guard stream.length == length else {
                        throw ImageStoreCorruption("the object of image \(image.id) has \(stream.length) bytes at \(offset), expected \(length)")
                    }
                    return try content(of: stream, length: length)
                }
            }
            image = try find(image.id, userID: image.userID)
        }
        throw ImageStoreCorruption("image \(image.id) has no bytes in its storage (\(image.storage))")
    }

    /// A small object whole, its connection free at once; a larger one as the store sends it, the
    /// answer's head going out before its first byte came.
    private func content(of stream: S3ObjectStream, length: Int) throws -> Content {
        guard length <= ImageService.chunkSize else { return .object(stream) }
        do throws(S3Error) { return .bytes(try stream.read(maxBytes: length)) } catch { throw Self.translated(error) }
    }

    // MARK: - Deletion

    /// Deletes the row, then the file; or the row with its objects queued for removal in the same
    /// transaction, then the objects.
    public func delete(_ id: UUID, userID: UUID) throws {
        let storage = try pool.withTransaction { connection -> ImageStorage? in
            let storage = try ImageRepository.delete(connection, id: id, userID: userID)
            if storage == .s3 { try ImageObjectRepository.enqueue(connection, keys: objectKeys(of: id)) }
            return storage
        }
        guard let storage else { throw ImageError.notFound }
        thumbnailCache.remove(id)
        switch storage {
        case .filesystem: removeFiles([id])
        case .s3: drainObjectDeletions()
        case .database: break
        }
    }

    /// Deletes every image row of a user inside the caller's transaction (deleting the account);
    /// pass the result to `removeFiles` after the commit.
    public func deleteAll(userID: UUID, _ connection: PostgresConnection) throws -> [UUID] {
        let deleted = try ImageRepository.deleteAll(connection, userID: userID)
        let objects = deleted.filter { $0.storage == .s3 }.flatMap { objectKeys(of: $0.id) }
        if !objects.isEmpty { try ImageObjectRepository.enqueue(connection, keys: objects) }
        return deleted.filter { $0.storage == .filesystem }.map(\.id)
    }

    /// Removes the files of deleted images and of their thumbnails; a failure is logged, and the
    /// sweep retries at start-up. With an object store, also the objects queued for removal.
    public func removeFiles(_ ids: [UUID]) {
        if objectStore != nil { drainObjectDeletions() }
        for id in ids {
            do {
                try directory.remove(id)
            } catch {
                logger.warning("could not remove an image file", ["image.id": id.uuidString.lowercased(), "error": error.description])
            }
        }
    }

    /// Reads `length` bytes from `offset` of a database-stored image on a reader thread and hands
    /// them to `completion`: the next chunk of a `.chunks` download. Fails when the image left the
    /// database storage meanwhile (moved or deleted).
    public func readChunk(
        of id: UUID, offset: Int, length: Int,
        _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void
    ) {
        let (pool, directory) = (self.pool, self.directory)
        let queued = readerPool()?.submit {
            completion(
                Result {
                    // An image's bytes never change wherever they are kept: a chunk the database no
                    // longer holds is read from the file `images migrate` moved the image to.
                    let bytes =
                        try pool.withConnection { try ImageRepository.data($0, id: id, offset: offset, length: length) }
                        ?? (try? ReadableFile(path: directory.path(of: id)).read(at: offset, count: length))
                        ?? (try self.objectChunk(of: id, offset: offset, length: length))
                    guard let bytes, bytes.count == length else {
                        throw ImageStoreCorruption("image \(id) has no \(length) bytes at \(offset) any more")
                    }
                    return bytes
                })
        }
        if queued != true { completion(.failure(ImageStoreCorruption("no reader free for image \(id)"))) }
    }

    /// The next chunk of a download from the object store, read on a reader thread and handed to
    /// `completion`.
    public func readChunk(of stream: S3ObjectStream, maxBytes: Int, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        let queued = readerPool()?.submit { [self] in
            var chunk = spareChunk()
            completion(
                Result { () throws(S3Error) in
                    try stream.read(into: &chunk, maxBytes: maxBytes)
                    return chunk
                }.mapError { Self.translated($0) })
        }
        if queued != true { completion(.failure(ImageStoreUnavailable(reason: "no reader free for a download"))) }
    }

    /// The next chunk of a download from the object store if the store sent it already, read on
    /// the calling thread; nil when a reader must wait for it (`readChunk(of:)`).
    public func readChunkIfReady(of stream: S3ObjectStream, maxBytes: Int) throws -> [UInt8]? {
        var chunk = spareChunk()
        do throws(S3Error) {
            if try stream.readIfReady(into: &chunk, maxBytes: maxBytes) { return chunk }
        } catch {
            throw Self.translated(error)
        }
        recycle(chunk)
        return nil
    }

    /// A chunk of a download from the object store, written, for a later chunk to fill again
    /// (`readChunk(of:)`): the kernel then receives into pages it already mapped, where a fresh
    /// 256 KiB array costs a page fault per 4 KiB (`bench/RESULTS.md`, session 24). At most
    /// `spareChunkBuffers` are kept.
    public func recycle(_ chunk: [UInt8]) {
        guard chunk.capacity >= ImageService.chunkSize else { return }
        chunkBuffers.withLock { buffers in
            if buffers.count < ImageService.spareChunkBuffers { buffers.append(chunk) }
        }
    }

    /// A written chunk to fill again, or an empty array when none is kept.
    private func spareChunk() -> [UInt8] {
        chunkBuffers.withLock { $0.popLast() } ?? []
    }

    /// How many written chunks `recycle` keeps: 2 MiB.
    static let spareChunkBuffers = 8

    /// The threads that read download chunks, started on first use; nil once shut down.
    private func readerPool() -> BoundedThreadPool? {
        readers.withLock { readers -> BoundedThreadPool? in
            if readers.pool == nil, !readers.stopped {
                readers.pool = BoundedThreadPool(name: "image-read", threads: 4, queueLimit: 4096)
            }
            return readers.pool
        }
    }

    // MARK: - Operations

    /// Images and bytes per storage, for `/metrics`: counted at most once per
    /// `totalsMaxAgeSeconds` (the count reads every row's metadata, too much for every scrape of a
    /// large deployment).
    public func totals() throws -> [ImageStorage: (count: Int, bytes: Int)] {
        let now = monotonicNanoseconds()
        if let cached = cachedTotals.withLock({ $0 }), Double(now &- cached.at) / 1e9 < configuration.totalsMaxAgeSeconds {
            return cached.totals
        }
        let totals = try pool.withConnection { try ImageRepository.totals($0) }
        cachedTotals.withLock { $0 = (totals, now) }
        return totals
    }
}

/// Stored bytes that do not match their metadata; a server-side fault (`500`), logged in full.
public struct ImageStoreCorruption: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
