import Foundation

/// Downloaded images on disk, by id, each with its `ETag`: `<id>` holds the bytes and
/// `<id>.etag` the tag. The least recently used go first beyond `maxBytes`. Every failure to
/// read or write is a cache miss: the server has the image.
final class ImageCache: Sendable {
    let directory: URL
    let maxBytes: Int
    private let lock = Locked(())

    init(directory: URL, maxBytes: Int) {
        self.directory = directory
        self.maxBytes = maxBytes
    }

    /// `<caches>/Exosphere/<host-port-path>`.
    static func defaultDirectory(for baseURL: URL) -> URL {
        let caches =
            FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? FileManager.default.temporaryDirectory
        return caches.appendingPathComponent("Exosphere", isDirectory: true)
            .appendingPathComponent(Exosphere.fileName(for: baseURL), isDirectory: true)
    }

    struct Entry {
        var data: Data
        var etag: String
    }

    /// The files of an id, or nil for an id that is not a safe file name (ids are UUIDs today).
    private func files(_ id: String) -> (data: URL, etag: URL)? {
        guard !id.isEmpty, id.count <= 128,
            id.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" })
        else { return nil }
        return (directory.appendingPathComponent(id), directory.appendingPathComponent(id + ".etag"))
    }

    func entry(forID id: String) -> Entry? {
        guard let files = files(id) else { return nil }
        return lock.withLock { _ in
            guard let etagData = FileManager.default.contents(atPath: files.etag.path),
                let data = FileManager.default.contents(atPath: files.data.path)
            else { return nil }
            // Touched, so that eviction sees it as recently used.
            try? FileManager.default.setAttributes([.modificationDate: Date()], ofItemAtPath: files.data.path)
            return Entry(data: data, etag: String(decoding: etagData, as: UTF8.self))
        }
    }

    func store(_ data: Data, etag: String, forID id: String) {
        guard let files = files(id), data.count <= maxBytes else { return }
        lock.withLock { _ in
            do {
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try data.write(to: files.data, options: .atomic)
                try Data(etag.utf8).write(to: files.etag, options: .atomic)
            } catch {
                // A cache that cannot be written is an empty cache; drop what half got there.
                try? FileManager.default.removeItem(at: files.etag)
                try? FileManager.default.removeItem(at: files.data)
                return
            }
            evict()
        }
    }

    func remove(id: String) {
        guard let files = files(id) else { return }
        lock.withLock { _ in
            try? FileManager.default.removeItem(at: files.etag)
            try? FileManager.default.removeItem(at: files.data)
        }
    }

    func removeAll() {
        lock.withLock { _ in
            _ = try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Deletes the least recently used images until the cache holds at most `maxBytes`.
    private func evict() {
        let keys: [URLResourceKey] = [.fileSizeKey, .contentModificationDateKey]
        guard let names = try? FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: keys) else { return }
        var images: [(url: URL, size: Int, used: Date)] = []
        var total = 0
        for url in names where url.pathExtension != "etag" {
            let values = try? url.resourceValues(forKeys: Set(keys))
            let size = values?.fileSize ?? 0
            total += size
            images.append((url, size, values?.contentModificationDate ?? .distantPast))
        }
        guard total > maxBytes else { return }
        for image in images.sorted(by: { $0.used < $1.used }) where total > maxBytes {
            try? FileManager.default.removeItem(at: image.url.appendingPathExtension("etag"))
            try? FileManager.default.removeItem(at: image.url)
            total -= image.size
        }
    }
}
