import Cryptography
import Files
import FoundationEssentials
import Postgres
import ObjectStorage
import Threads
import Thumbnails

extension ImageService {
    /// A thumbnail ready to send.
    public struct Thumbnail: Sendable {
        public let spec: ThumbnailSpec
        public let sha256: [UInt8]
        /// `.bytes`, or `.file` for the filesystem storage.
        public let content: Content

        /// The strong entity tag: the quoted hex SHA-256 of the thumbnail's bytes.
        public var etag: String { "\"" + Hex.encode(sha256) + "\"" }
    }

    /// How long a signed URL trusts that an image it served from memory still exists: an image
    /// deleted through another instance stays reachable by such a URL on this one for at most
    /// this long (a CDN keeps it until the URL expires anyway).
    public static let signedThumbnailFreshnessNanoseconds: UInt64 = 5_000_000_000

    /// The `size` query parameter: 256 when absent, else one of `ThumbnailSpec.sizes`.
    public static func thumbnailSize(_ text: String?) throws -> Int {
        guard let text else { return ThumbnailSpec.uploadSize }
        guard text.utf8.count <= 4, let size = Int(text), ThumbnailSpec.sizes.contains(size) else {
            throw ImageError(.invalidSize, "size must be one of 128, 256, 512 or 1024.")
        }
        return size
    }

    /// One of the user's images' thumbnail, made if it is the first request for it.
    public func thumbnail(_ id: UUID, userID: UUID, _ spec: ThumbnailSpec) throws -> Thumbnail {
        try thumbnail(of: find(id, userID: userID), spec)
    }

    /// The thumbnail behind a signed URL if memory has it and its image was seen lately; never
    /// blocks (the event loop asks).
    public func cachedThumbnail(signed id: UUID, _ spec: ThumbnailSpec) -> Thumbnail? {
        thumbnailCache.get(id, spec, maxAgeNanoseconds: ImageService.signedThumbnailFreshnessNanoseconds)
    }

    /// The thumbnail behind a signed URL: from memory if the image was seen lately, else as `thumbnail`.
    public func thumbnail(signed id: UUID, _ spec: ThumbnailSpec) throws -> Thumbnail {
        if let cached = thumbnailCache.get(id, spec, maxAgeNanoseconds: ImageService.signedThumbnailFreshnessNanoseconds) {
            return cached
        }
        return try thumbnail(of: find(signed: id), spec)
    }

    /// The thumbnail of an image that exists (the caller just read it): from memory, from its
    /// storage, or made now by a helper and stored (every instance then serves it).
    public func thumbnail(of image: StoredImage, _ spec: ThumbnailSpec) throws -> Thumbnail {
        if let cached = thumbnailCache.get(image.id, spec) {
            thumbnailCache.put(cached, of: image.id)  // seen now
            return cached
        }
        if let stored = try storedThumbnail(of: image, spec) { return remember(stored, of: image.id) }
        if let reason = image.thumbnailError { throw ImageService.undecodable(reason) }
        return try oneAtATime(image.id) {
            // Another request may have made it while this one waited.
            let current = try find(image.id, userID: image.userID)
            if let stored = try storedThumbnail(of: current, spec) { return remember(stored, of: image.id) }
            if let reason = current.thumbnailError { throw ImageService.undecodable(reason) }
            let made = try make(current, [spec])
            guard let rendition = made.first(where: { $0.spec == spec }) else { throw ImageService.undecodable("no thumbnail made") }
            return remember(Thumbnail(spec: spec, sha256: SHA256.hash(rendition.bytes), content: .bytes(rendition.bytes)), of: image.id)
        }
    }

    /// After an upload: makes the 256 WebP thumbnail and the placeholders in the background, so
    /// that the grid's first request finds them. Nothing happens without helpers, and a full
    /// queue skips it (the first request makes it then). `original`, the upload's bytes, is kept
    /// for the helper while the queue holds less than `preparedBytesLimit` of them, which saves
    /// reading the image back from its storage. The helper runs lowered (`backgroundNiceness`):
    /// uploads and downloads come first on a busy machine. It does not hold the image's turn
    /// (`oneAtATime`), so that a request for the thumbnail never waits on a lowered helper: it
    /// makes its own, and the second one made is not stored.
    public func prepareThumbnails(_ image: StoredImage, original: UnsafeRawBufferPointer? = nil) {
        guard thumbnailer != nil, let preparers = self.preparers.withLock({ $0.pool }) else { return }
        let logger = self.logger
        let kept: [UInt8]? = original.flatMap { original in
            preparedBytes.withLock { held in
                guard held + original.count <= ImageService.preparedBytesLimit else { return nil }
                held += original.count
                return Array(original)
            }
        }
        let release: @Sendable () -> Void = { [self] in if let kept { preparedBytes.withLock { $0 -= kept.count } } }
        let queued = preparers.submit { [self] in
            defer { release() }
            do {
                let current = try find(image.id, userID: image.userID)
                let spec = ThumbnailSpec(size: ThumbnailSpec.uploadSize, format: .webp)
                if current.thumbnailError != nil { return }
                if current.blurhash != nil, try storedThumbnail(of: current, spec) != nil { return }
                _ = try make(current, [spec], background: true, original: kept)
            } catch let error as ImageError where error.code == .notFound || error.code == .undecodable {
                // Deleted meanwhile, or recorded as undecodable.
            } catch {
                logger.warning("could not prepare an image's thumbnail", ["image.id": image.id.uuidString.lowercased(), "error": "\(error)"])
            }
        }
        if !queued { release() }
    }

    /// The upload bytes kept at most for thumbnails waiting to be made in the background.
    static let preparedBytesLimit = 64 << 20

    // MARK: - Making

    /// Decodes the original on a helper and stores what it made with the placeholders; records a
    /// file that cannot be decoded so that it is never tried again.
    /// `original` is the image's bytes when the caller has them.
    func make(_ image: StoredImage, _ specs: [ThumbnailSpec], background: Bool = false, original: [UInt8]? = nil) throws -> [Rendition] {
        guard let thumbnailer else { throw ThumbnailsUnavailable("this server makes no thumbnails") }
        let original = try original ?? originalBytes(of: image)
        let job = ThumbnailJob(
            renditions: specs, placeholders: image.blurhash == nil, maxPixels: configuration.limits.maxPixels, cpuSeconds: 0)
        var outcome = try original.withUnsafeBytes { try thumbnailer.render(job, original: $0, background: background) }
        if case .made(let renditions, _) = outcome, let odd = renditions.first(where: { !Self.isWhatItSays($0) }) {
            // The pool checked the renditions, sizes and signatures; the headers' own dimensions
            // must agree too. A helper has one image, so a lie is this file's doing.
            logger.error(
                "a thumbnail helper's rendition is not what it says",
                ["image.id": image.id.uuidString.lowercased(), "rendition": "\(odd.spec) \(odd.width)×\(odd.height)"])
            outcome = .undecodable("the decoder's answer was not the rendition asked for")
        }
        switch outcome {
        case .undecodable(let reason):
            logger.info("an image cannot be decoded", ["image.id": image.id.uuidString.lowercased(), "reason": reason])
            try pool.withConnection { try ThumbnailRepository.setError($0, id: image.id, reason) }
            throw ImageService.undecodable(reason)
        case .made(let renditions, let placeholders):
            try store(renditions, placeholders, of: image.id)
            return renditions
        }
    }

    /// Whether a rendition's bytes are an image of its format with the dimensions it declares.
    static func isWhatItSays(_ rendition: Rendition) -> Bool {
        let format: ImageFormat = rendition.spec.format == .webp ? .webp : .jpeg
        guard case .success(let info) = ImageInspector.inspect(rendition.bytes, declared: format) else { return false }
        return info.width == rendition.width && info.height == rendition.height
    }

    /// Stores thumbnails where the image's bytes are, under a lock of the image's row: a move, a
    /// deletion or another instance storing the same thumbnail waits, and a deleted image's
    /// thumbnails are dropped.
    func store(_ renditions: [Rendition], _ placeholders: Placeholders?, of id: UUID) throws {
        try pool.withTransaction { connection in
            guard let storage = try ThumbnailRepository.lockImage(connection, id: id) else { return }
            if let placeholders { try ThumbnailRepository.setPlaceholders(connection, id: id, placeholders) }
            for rendition in renditions {
                if try ThumbnailRepository.find(connection, id: id, spec: rendition.spec) != nil { continue }
                if storage == .filesystem {
                    try ImageRepository.lockDirectory(connection, prefix: ImageDirectory.prefix(of: id), exclusive: false)
                    try publishThumbnail(rendition.bytes, rendition.spec, of: id)
                } else if storage == .s3 {
                    // Beside the original, before its row; the image's deletion queues every thumbnail key.
                    let key = thumbnailObjectKey(id, rendition.spec)
                    try withObjectStore { store throws(S3Error) in
                        try store.putObject(key, rendition.bytes, contentType: rendition.spec.format.mimeType)
                    }
                }
                try ThumbnailRepository.insert(
                    connection, id: id, rendition, sha256: SHA256.hash(rendition.bytes), inDatabase: storage == .database)
            }
        }
    }

    /// Writes a thumbnail's file durably: a temporary file, then its name.
    func publishThumbnail(_ bytes: [UInt8], _ spec: ThumbnailSpec, of id: UUID) throws {
        let temporary = try bytes.withUnsafeBytes { try directory.writeTemporary($0, for: id) }
        do {
            try directory.publish(temporary, asThumbnail: spec, of: id)
        } catch {
            _ = try? FileSystem.remove(temporary)
            throw error
        }
    }

    /// The whole original, wherever it is kept now.
    func originalBytes(of image: StoredImage) throws -> [UInt8] {
        var image = image
        for attempt in 0..<2 {
            switch image.storage {
            case .database:
                if let bytes = try pool.withConnection({ try ImageRepository.data($0, id: image.id, offset: 0, length: image.byteSize) }) {
                    return bytes
                }
            case .filesystem:
                // Missing: moved to the database, or deleted, since the metadata was read.
                if let bytes = try? FileReader.bytes(directory.path(of: image.id), limit: image.byteSize) { return bytes }
                if attempt == 1 { throw ImageStoreCorruption("the file of image \(image.id) cannot be read") }
            case .s3:
                let store = try requireObjectStore()
                let body: S3ObjectBody?
                do throws(S3Error) {
                    body = try store.getObject(objectKey(image.id))
                } catch  where error.code == .notFound && attempt == 0 {
                    body = nil  // Deleted since the metadata was read.
                } catch {
                    throw Self.translated(error)
                }
                if let body {
                    guard body.bytes.count == image.byteSize else {
                        throw ImageStoreCorruption("the object of image \(image.id) has \(body.bytes.count) bytes, expected \(image.byteSize)")
                    }
                    return body.bytes
                }
            }
            image = try find(image.id, userID: image.userID)
        }
        throw ImageStoreCorruption("image \(image.id) has no bytes in its storage (\(image.storage))")
    }

    // MARK: - Reading stored ones

    func storedThumbnail(of image: StoredImage, _ spec: ThumbnailSpec) throws -> Thumbnail? {
        guard let row = try pool.withConnection({ try ThumbnailRepository.find($0, id: image.id, spec: spec) }) else { return nil }
        if let bytes = row.bytes { return Thumbnail(spec: spec, sha256: row.sha256, content: .bytes(bytes)) }
        if image.storage == .s3 {
            let key = thumbnailObjectKey(image.id, spec)
            let bytes = try withObjectStore { store throws(S3Error) in try store.getObject(key).bytes }
            guard bytes.count == row.byteSize else {
                throw ImageStoreCorruption("the thumbnail \(spec) of image \(image.id) has \(bytes.count) bytes, expected \(row.byteSize)")
            }
            return Thumbnail(spec: spec, sha256: row.sha256, content: .bytes(bytes))
        }
        // Thumbnails are small: read whole, so that memory can keep them.
        do {
            let bytes = try FileReader.bytes(directory.thumbnailPath(of: image.id, spec), limit: row.byteSize)
            guard bytes.count == row.byteSize else {
                throw ImageStoreCorruption("the thumbnail \(spec) of image \(image.id) has \(bytes.count) bytes, expected \(row.byteSize)")
            }
            return Thumbnail(spec: spec, sha256: row.sha256, content: .bytes(bytes))
        } catch is FileReader.Failure {
            // Moved to the database meanwhile: read the row again once.
            guard let again = try pool.withConnection({ try ThumbnailRepository.find($0, id: image.id, spec: spec) }), let bytes = again.bytes
            else { throw ImageStoreCorruption("the thumbnail \(spec) of image \(image.id) has no file") }
            return Thumbnail(spec: spec, sha256: again.sha256, content: .bytes(bytes))
        }
    }

    private func remember(_ thumbnail: Thumbnail, of id: UUID) -> Thumbnail {
        thumbnailCache.put(thumbnail, of: id)
        return thumbnail
    }

    /// Runs `body` while no other thread of this process makes thumbnails of the same image.
    func oneAtATime<T>(_ id: UUID, _ body: () throws -> T) throws -> T {
        making.withLock(when: { !makingIDs.contains(id) }) { makingIDs.insert(id) }
        defer {
            making.withLock {
                makingIDs.remove(id)
                making.broadcast()
            }
        }
        return try body()
    }

    static func undecodable(_ reason: String) -> ImageError {
        ImageError(.undecodable, "The image cannot be decoded into a thumbnail (\(reason)).")
    }
}
