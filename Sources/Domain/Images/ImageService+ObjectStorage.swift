import CivilTime
import FoundationEssentials
import ObjectStorage
import Postgres
import Threads
import Thumbnails

/// The object store could not be reached or did not answer in time: `503` with `Retry-After`; the
/// rest of the API keeps serving.
public struct ImageStoreUnavailable: Error, Sendable, CustomStringConvertible {
    /// Why, for the operator's log (never sent to the client).
    public let reason: String
    public var description: String { "the image store is unavailable: \(reason)" }
}

/// The object storage (`s3`): an image is the object `<prefix><id>`, its thumbnails
/// `<prefix><id>-<size>.<webp|jpg>` beside it. An object is written before its row commits; a
/// deleted image's objects are queued in the deleting transaction and removed after it, by any
/// instance, until the store confirms; an object whose row never committed is removed by the sweep.
extension ImageService {
    func objectKey(_ id: UUID) -> String { configuration.s3Prefix + id.uuidString.lowercased() }

    func thumbnailObjectKey(_ id: UUID, _ spec: ThumbnailSpec) -> String {
        configuration.s3Prefix + ImageDirectory.thumbnailName(of: id, spec)
    }

    /// Every key an image may have: the original and each thumbnail it might have been given.
    func objectKeys(of id: UUID) -> [String] {
        [objectKey(id)] + ImageDirectory.allSpecs().map { thumbnailObjectKey(id, $0) }
    }

    func requireObjectStore() throws -> S3Client {
        guard let objectStore else { throw ImageStoreUnavailable(reason: objectStoreFailure.map { String(reflecting: $0) } ?? "no --s3-endpoint") }
        return objectStore
    }

    /// What a store's error becomes: a store down or slow is `503`; anything else is the server's fault (`500`), logged in full.
    static func translated(_ error: S3Error) -> any Error {
        error.isTransient ? ImageStoreUnavailable(reason: String(reflecting: error)) : ImageStoreCorruption(String(reflecting: error))
    }

    /// Runs `body` against the store, its errors translated.
    func withObjectStore<T>(_ body: (S3Client) throws(S3Error) -> T) throws -> T {
        let store = try requireObjectStore()
        do throws(S3Error) { return try body(store) } catch { throw Self.translated(error) }
    }

    /// With `--s3-redirect`, where a signed URL of an `s3` image sends its client: a presigned GET
    /// of the object that lives as long as the signed URL had left (1 s to 7 days); else nil.
    public func presignedURL(of image: StoredImage, expires seconds: Int) -> String? {
        guard configuration.s3Redirect, image.storage == .s3, let objectStore else { return nil }
        return objectStore.presignedGetURL(objectKey(image.id), expires: min(max(seconds, 1), 604_800))
    }

    /// A chunk of an `s3` image for `readChunk` (the export); nil without a store or an object.
    func objectChunk(of id: UUID, offset: Int, length: Int) throws -> [UInt8]? {
        guard let objectStore else { return nil }
        do throws(S3Error) {
            return try objectStore.getObject(objectKey(id), range: offset...(offset + length - 1)).bytes
        } catch  where error.code == .notFound {
            return nil
        } catch {
            throw Self.translated(error)
        }
    }

    /// Whether the store answers for the bucket within `bound` (`/readyz`: a probe must not hang
    /// on a store that does).
    public func checkObjectStore(within bound: Duration = .seconds(2)) throws {
        let own = RequestDeadline.after(bound)
        try RequestDeadline.with(RequestDeadline.current.map { min($0, own) } ?? own) {
            try withObjectStore { store throws(S3Error) in try store.checkBucket() }
        }
    }

    /// Removes queued objects that are due, up to `limit`; how many the store confirmed. A failure
    /// leaves the key queued with a longer wait; nothing is lost.
    @discardableResult
    public func drainObjectDeletions(limit: Int = 100) -> Int {
        guard let objectStore else { return 0 }
        var removed = 0
        do {
            let keys = try pool.withConnection { try ImageObjectRepository.takeDue($0, limit: limit) }
            for key in keys {
                do {
                    try objectStore.deleteObject(key)
                    try pool.withConnection { try ImageObjectRepository.remove($0, key: key) }
                    removed += 1
                } catch {
                    logger.warning("could not remove an image object; it stays queued", ["object.key": key, "error": String(reflecting: error)])
                    if (error as? S3Error)?.isTransient == true { break }
                }
            }
        } catch {
            logger.warning("could not read the queue of image objects to remove", ["error": "\(error)"])
        }
        return removed
    }

    /// Objects queued for removal and not yet confirmed.
    public func pendingObjectDeletions() throws -> Int {
        try pool.withConnection { try ImageObjectRepository.pendingCount($0) }
    }

    /// `sweepObjects` again once this instance last ran it `objectSweepIntervalSeconds` ago (the
    /// sweeps thread asks every 30 s; the start-up sweep runs first): an upload killed between its
    /// object and its row leaves an object that goes within the grace period and an interval. Nil
    /// when not due.
    @discardableResult
    public func sweepObjectsIfDue(now: Int = Int(Date().timeIntervalSince1970)) throws -> Int? {
        guard objectStore != nil else { return nil }
        let due = lastObjectSweep.withLock { last in last.map { now - $0 >= configuration.objectSweepIntervalSeconds } ?? false }
        return due ? try sweepObjects(now: now) : nil
    }

    /// Removes objects under the prefix that no `s3` row refers to and that are older than
    /// `orphanObjectGraceSeconds` (an upload in flight has written its object and not yet
    /// committed its row); how many.
    public func sweepObjects(now: Int = Int(Date().timeIntervalSince1970)) throws -> Int {
        guard objectStore != nil else { return 0 }
        lastObjectSweep.withLock { $0 = now }
        let graceSeconds = configuration.orphanObjectGraceSeconds
        let prefix = configuration.s3Prefix
        let objects = try withObjectStore { store throws(S3Error) in try store.listAllObjects(prefix: prefix) }
        var removed = 0
        for object in objects {
            let name = object.key.dropFirst(prefix.count)
            guard let id = UUID(uuidString: String(name.prefix(36))) else { continue }  // not ours
            guard let modified = Self.seconds(iso8601: object.lastModified), now - modified >= graceSeconds else { continue }
            if try pool.withConnection({ try ImageObjectRepository.hasObjectRow($0, id: id) }) { continue }
            try withObjectStore { store throws(S3Error) in try store.deleteObject(object.key) }
            removed += 1
        }
        return removed
    }

    /// Seconds since 1970 of `2026-12-05T10:00:00.000Z` (S3's `LastModified`).
    static func seconds(iso8601 text: String) -> Int? {
        let digits = Array(text.utf8)
        guard digits.count >= 20, digits[4] == UInt8(ascii: "-"), digits[10] == UInt8(ascii: "T") else { return nil }
        func number(_ from: Int, _ count: Int) -> Int64? { Int64(String(decoding: digits[from..<(from + count)], as: UTF8.self)) }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2), let minute = number(14, 2),
            let second = number(17, 2)
        else { return nil }
        let date = CivilDate(year: year, month: month, day: day)
        guard date.isValid else { return nil }
        return Int(date.daysSinceEpoch * 86_400 + hour * 3600 + minute * 60 + second)
    }
}
