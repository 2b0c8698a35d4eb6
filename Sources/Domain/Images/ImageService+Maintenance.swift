import Files
import FoundationEssentials
import Glibc
import Postgres
import Cryptography
import ObjectStorage

extension ImageService {
    /// What a sweep removed.
    public struct SweepReport: Sendable, Equatable {
        /// Image files without a row (a crash between rename and commit, a failed removal).
        public var orphanFiles = 0
        /// Temporary files older than the grace period (a crash while writing).
        public var temporaryFiles = 0
        /// Thumbnail files without a row (their image deleted, or moved to the database).
        public var orphanThumbnails = 0
        /// Objects of the object store without a row, older than the grace period.
        public var orphanObjects = 0
    }

    /// Removes files that no row refers to, directory by directory; each directory is locked
    /// against publishing for the moment it is checked, so an upload in flight on another
    /// instance sharing the database is never mistaken for an orphan.
    public func sweep(now: Int = Int(Date().timeIntervalSince1970)) throws -> SweepReport {
        var report = SweepReport()
        for prefix in 0...UInt8.max {
            guard try !directory.files(prefix: prefix).isEmpty || !directory.thumbnailFiles(prefix: prefix).isEmpty else { continue }
            try pool.withTransaction { connection in
                try ImageRepository.lockDirectory(connection, prefix: prefix, exclusive: true)
                let kept = try ImageRepository.filesystemIDs(connection, prefix: prefix)
                // Listed again under the lock: a file published just before it is in `kept`.
                for id in try directory.files(prefix: prefix) where !kept.contains(id) {
                    if try directory.remove(id) { report.orphanFiles += 1 }
                }
                let keptThumbnails = try ThumbnailRepository.filesystemNames(connection, prefix: prefix)
                for name in try directory.thumbnailFiles(prefix: prefix) where !keptThumbnails.contains(name) {
                    if try FileSystem.remove(directory.directory(prefix: prefix) + "/" + name) { report.orphanThumbnails += 1 }
                }
                if report.orphanThumbnails > 0 { try FileSystem.syncDirectory(directory.directory(prefix: prefix)) }
            }
        }
        for name in try FileSystem.entries(of: directory.temporaryDirectory) where name.hasSuffix(".part") {
            let path = directory.temporaryDirectory + "/" + name
            if let modified = FileSystem.modificationTime(path), now - modified > configuration.temporaryFileGraceSeconds,
                try FileSystem.remove(path)
            {
                report.temporaryFiles += 1
            }
        }
        if objectStore != nil {
            // Best effort: a store that is down at start-up must not keep the server from serving.
            drainObjectDeletions()
            do {
                report.orphanObjects = try sweepObjects(now: now)
            } catch {
                logger.warning("could not sweep the image store's orphan objects", ["error": "\(error)"])
            }
        }
        return report
    }

    /// Moves every image kept in the other storages to `target`, oldest first, one transaction per
    /// image: interrupting it leaves every image whole in one storage, and running it again goes on.
    /// At most `limit` images are moved (to spread a large move over time); `progress(moved, total)`
    /// is called after each image.
    @discardableResult
    public func migrate(to target: ImageStorage, limit: Int = .max, progress: (Int, Int) -> Void = { _, _ in }) throws -> Int {
        let sources = ImageStorage.allCases.filter { $0 != target }
        if target == .filesystem { try directory.prepare() }
        if target == .s3 { try withObjectStore { store throws(S3Error) in try store.createBucketIfMissing() } }
        var total = 0
        for source in sources { total += try pool.withConnection { try ImageRepository.count($0, in: source) } }
        total = min(limit, total)
        var moved = 0
        for source in sources {
            while moved < limit {
                let batch = try pool.withConnection { try ImageRepository.pending($0, in: source, limit: min(100, limit - moved)) }
                if batch.isEmpty { break }
                for id in batch {
                    if try move(id, from: source, to: target) { moved += 1 }
                    progress(moved, max(total, moved))
                }
            }
        }
        return moved
    }

    /// Moves one image; false if it was deleted or moved by someone else meanwhile.
    func move(_ id: UUID, from source: ImageStorage, to target: ImageStorage) throws -> Bool {
        if source == .s3 { return try moveFromObjectStore(id, to: target) }
        switch target {
        case .s3:
            return try moveToObjectStore(id, from: source)
        case .filesystem:
            var temporary: String?
            defer { if let temporary { _ = try? FileSystem.remove(temporary) } }
            return try pool.withTransaction { connection in
                guard let image = try ImageRepository.lockForMove(connection, id: id, storage: source) else { return false }
                guard let bytes = try ImageRepository.data(connection, id: id, offset: 0, length: image.byteSize),
                    bytes.count == image.byteSize, SHA256.hash(bytes) == image.sha256
                else {
                    throw ImageStoreCorruption("the stored bytes of image \(id) do not match its size and SHA-256")
                }
                let written = try bytes.withUnsafeBytes { try directory.writeTemporary($0, for: id) }
                temporary = written
                try ImageRepository.lockDirectory(connection, prefix: ImageDirectory.prefix(of: id), exclusive: false)
                try directory.publish(written, as: id)
                temporary = nil
                // Its thumbnails go with it.
                for thumbnail in try ThumbnailRepository.all(connection, id: id) {
                    guard let bytes = thumbnail.bytes else { continue }
                    try publishThumbnail(bytes, thumbnail.spec, of: id)
                    try ThumbnailRepository.setBytes(connection, id: id, spec: thumbnail.spec, bytes: nil)
                }
                try ImageRepository.markMoved(connection, id: id, to: .filesystem)
                return true
            }
        case .database:
            let moved = try pool.withTransaction { connection in
                guard let image = try ImageRepository.lockForMove(connection, id: id, storage: source) else { return false }
                // One byte over the recorded size is enough to see that the file does not match.
                let bytes = try FileReader.bytes(directory.path(of: id), limit: image.byteSize + 1)
                guard bytes.count == image.byteSize, SHA256.hash(bytes) == image.sha256 else {
                    throw ImageStoreCorruption("the file of image \(id) does not match its size and SHA-256")
                }
                try bytes.withUnsafeBytes { try ImageRepository.insertData(connection, id: id, bytes: $0) }
                // Its thumbnails go with it; one whose file is missing is dropped (the next request makes it again).
                for thumbnail in try ThumbnailRepository.all(connection, id: id) where thumbnail.bytes == nil {
                    if let bytes = try? FileReader.bytes(directory.thumbnailPath(of: id, thumbnail.spec), limit: thumbnail.byteSize + 1),
                        bytes.count == thumbnail.byteSize, SHA256.hash(bytes) == thumbnail.sha256
                    {
                        try ThumbnailRepository.setBytes(connection, id: id, spec: thumbnail.spec, bytes: bytes)
                    } else {
                        try ThumbnailRepository.delete(connection, id: id, spec: thumbnail.spec)
                    }
                }
                try ImageRepository.markMoved(connection, id: id, to: .database)
                return true
            }
            // After the commit; a crash before this leaves an orphan file for the sweep.
            if moved { removeFiles([id]) }
            return moved
        }
    }
}

extension ImageService {
    /// Moves one image (and its thumbnails) from the database or its file to objects: the objects
    /// are written and confirmed before the row says `s3`; the old bytes go once it committed (the
    /// database's with the row's change, a file after). A crash after a put leaves an object
    /// without a row, which the sweep removes.
    func moveToObjectStore(_ id: UUID, from source: ImageStorage) throws -> Bool {
        let moved = try pool.withTransaction { connection in
            guard let image = try ImageRepository.lockForMove(connection, id: id, storage: source) else { return false }
            let bytes: [UInt8]?
            switch source {
            case .database: bytes = try ImageRepository.data(connection, id: id, offset: 0, length: image.byteSize)
            case .filesystem: bytes = try FileReader.bytes(directory.path(of: id), limit: image.byteSize + 1)
            case .s3: bytes = nil
            }
            guard let bytes, bytes.count == image.byteSize, SHA256.hash(bytes) == image.sha256 else {
                throw ImageStoreCorruption("the stored bytes of image \(id) do not match its size and SHA-256")
            }
            let key = objectKey(id)
            try withObjectStore { store throws(S3Error) in
                try store.putObject(key, bytes, contentType: image.format.mimeType, sha256: image.sha256)
            }
            // Its thumbnails go with it; one whose bytes are missing is dropped (the next request makes it again).
            for thumbnail in try ThumbnailRepository.all(connection, id: id) {
                let kept = thumbnail.bytes ?? (try? FileReader.bytes(directory.thumbnailPath(of: id, thumbnail.spec), limit: thumbnail.byteSize + 1))
                guard let kept, kept.count == thumbnail.byteSize, SHA256.hash(kept) == thumbnail.sha256 else {
                    try ThumbnailRepository.delete(connection, id: id, spec: thumbnail.spec)
                    continue
                }
                let thumbnailKey = thumbnailObjectKey(id, thumbnail.spec)
                try withObjectStore { store throws(S3Error) in
                    try store.putObject(thumbnailKey, kept, contentType: thumbnail.spec.format.mimeType, sha256: thumbnail.sha256)
                }
                if thumbnail.bytes != nil { try ThumbnailRepository.setBytes(connection, id: id, spec: thumbnail.spec, bytes: nil) }
            }
            try ImageRepository.markMoved(connection, id: id, to: .s3)
            return true
        }
        if moved, source == .filesystem { removeFiles([id]) }
        return moved
    }

    /// Moves one image (and its thumbnails) from objects to the database or a file; its objects
    /// are queued for removal in the same transaction and removed after it.
    func moveFromObjectStore(_ id: UUID, to target: ImageStorage) throws -> Bool {
        var temporaries: [String] = []
        defer { for temporary in temporaries { _ = try? FileSystem.remove(temporary) } }
        let moved = try pool.withTransaction { connection in
            guard let image = try ImageRepository.lockForMove(connection, id: id, storage: .s3) else { return false }
            let key = objectKey(id)
            let bytes = try withObjectStore { store throws(S3Error) in try store.getObject(key).bytes }
            guard bytes.count == image.byteSize, SHA256.hash(bytes) == image.sha256 else {
                throw ImageStoreCorruption("the object of image \(id) does not match its size and SHA-256")
            }
            if target == .filesystem {
                let written = try bytes.withUnsafeBytes { try directory.writeTemporary($0, for: id) }
                temporaries.append(written)
                try ImageRepository.lockDirectory(connection, prefix: ImageDirectory.prefix(of: id), exclusive: false)
                try directory.publish(written, as: id)
                temporaries.removeAll()
            } else {
                try bytes.withUnsafeBytes { try ImageRepository.insertData(connection, id: id, bytes: $0) }
            }
            for thumbnail in try ThumbnailRepository.all(connection, id: id) where thumbnail.bytes == nil {
                let thumbnailKey = thumbnailObjectKey(id, thumbnail.spec)
                let kept: [UInt8]?
                do throws(S3Error) {
                    kept = try objectStore?.getObject(thumbnailKey).bytes
                } catch  where error.code == .notFound {
                    kept = nil
                } catch {
                    throw Self.translated(error)
                }
                guard let kept, kept.count == thumbnail.byteSize, SHA256.hash(kept) == thumbnail.sha256 else {
                    try ThumbnailRepository.delete(connection, id: id, spec: thumbnail.spec)
                    continue
                }
                if target == .filesystem {
                    try publishThumbnail(kept, thumbnail.spec, of: id)
                } else {
                    try ThumbnailRepository.setBytes(connection, id: id, spec: thumbnail.spec, bytes: kept)
                }
            }
            try ImageRepository.markMoved(connection, id: id, to: target)
            try ImageObjectRepository.enqueue(connection, keys: objectKeys(of: id))
            return true
        }
        if moved { drainObjectDeletions() }
        return moved
    }
}
