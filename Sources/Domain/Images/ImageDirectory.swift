import Files
import FoundationEssentials
import Glibc
import Cryptography
import Thumbnails

/// The layout of the filesystem storage: `<root>/<first two hex digits of the id>/<id>` for
/// images, `<root>/tmp/<id>.<random>.part` for uploads being written. Every name comes from the
/// server's own UUIDs; nothing a client sends reaches a path.
public struct ImageDirectory: Sendable {
    public let root: String

    public init(root: String) {
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
    }

    var temporaryDirectory: String { root + "/tmp" }

    static func prefix(of id: UUID) -> UInt8 { id.uuid.0 }

    func directory(prefix: UInt8) -> String { root + "/" + Hex.encode([prefix]) }

    public func path(of id: UUID) -> String {
        directory(prefix: ImageDirectory.prefix(of: id)) + "/" + id.uuidString.lowercased()
    }

    /// `<id>-<size>.<webp|jpg>`, next to the image's own file.
    static func thumbnailName(of id: UUID, _ spec: ThumbnailSpec) -> String {
        id.uuidString.lowercased() + "-" + String(spec.size) + "." + spec.format.fileExtension
    }

    public func thumbnailPath(of id: UUID, _ spec: ThumbnailSpec) -> String {
        directory(prefix: ImageDirectory.prefix(of: id)) + "/" + ImageDirectory.thumbnailName(of: id, spec)
    }

    /// Every thumbnail name an image may have.
    static func allSpecs() -> [ThumbnailSpec] {
        ThumbnailSpec.sizes.flatMap { size in ThumbnailFormat.allCases.map { ThumbnailSpec(size: size, format: $0) } }
    }

    func temporaryPath(for id: UUID) -> String {
        temporaryDirectory + "/" + id.uuidString.lowercased() + "." + String(UInt32.random(in: 0...UInt32.max), radix: 16) + ".part"
    }

    /// Creates the root, `tmp` and the 256 prefix directories, so that publishing a file never
    /// has to create (and make durable) a directory.
    func prepare() throws(FileSystemError) {
        try FileSystem.createDirectory(temporaryDirectory)
        var created = false
        for prefix in 0...UInt8.max {
            let path = directory(prefix: prefix)
            if mkdir(path, 0o750) == 0 {
                created = true
            } else if errno != EEXIST {
                throw FileSystemError("mkdir", path)
            }
        }
        if created { try FileSystem.syncDirectory(root) }
    }

    /// Writes `bytes` durably under a temporary name and returns it.
    func writeTemporary(_ bytes: UnsafeRawBufferPointer, for id: UUID) throws(FileSystemError) -> String {
        let path = temporaryPath(for: id)
        try FileSystem.writeNewFile(path, bytes, sync: true)
        return path
    }

    /// Moves a written temporary file to the image's name and makes the new name durable.
    func publish(_ temporary: String, as id: UUID) throws(FileSystemError) {
        try FileSystem.rename(temporary, to: path(of: id))
        try FileSystem.syncDirectory(directory(prefix: ImageDirectory.prefix(of: id)))
    }

    /// Moves a written temporary file to a thumbnail's name and makes the new name durable.
    func publish(_ temporary: String, asThumbnail spec: ThumbnailSpec, of id: UUID) throws(FileSystemError) {
        try FileSystem.rename(temporary, to: thumbnailPath(of: id, spec))
        try FileSystem.syncDirectory(directory(prefix: ImageDirectory.prefix(of: id)))
    }

    /// Removes an image's file and its thumbnails' and makes the removal durable; false if there was no image file.
    @discardableResult
    func remove(_ id: UUID) throws(FileSystemError) -> Bool {
        let removed = try FileSystem.remove(path(of: id))
        var thumbnails = false
        for spec in ImageDirectory.allSpecs() where try FileSystem.remove(thumbnailPath(of: id, spec)) { thumbnails = true }
        if removed || thumbnails { try FileSystem.syncDirectory(directory(prefix: ImageDirectory.prefix(of: id))) }
        return removed
    }

    /// Removes one thumbnail file (made durable by the caller's next directory sync).
    func removeThumbnail(_ id: UUID, _ spec: ThumbnailSpec) throws(FileSystemError) {
        if try FileSystem.remove(thumbnailPath(of: id, spec)) {
            try FileSystem.syncDirectory(directory(prefix: ImageDirectory.prefix(of: id)))
        }
    }

    /// The thumbnail file names in one prefix directory: `<id>-<size>.<ext>` with a known size and extension.
    func thumbnailFiles(prefix: UInt8) throws(FileSystemError) -> [String] {
        let names = Set(ImageDirectory.allSpecs().map { "-\($0.size).\($0.format.fileExtension)" })
        return try FileSystem.entries(of: directory(prefix: prefix)).filter { name in
            guard name.utf8.count > 37, let id = UUID(uuidString: String(name.prefix(36))), ImageDirectory.prefix(of: id) == prefix else {
                return false
            }
            return names.contains(String(name.dropFirst(36)))
        }
    }

    /// The image ids with a file in one prefix directory; names that are not ours are skipped.
    func files(prefix: UInt8) throws(FileSystemError) -> [UUID] {
        try FileSystem.entries(of: directory(prefix: prefix)).compactMap { name in
            guard name.utf8.count == 36, let id = UUID(uuidString: name), id.uuidString.lowercased() == name,
                ImageDirectory.prefix(of: id) == prefix
            else { return nil }
            return id
        }
    }
}
