import Files
import FoundationEssentials
import Glibc
import Cryptography

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

    /// Removes an image's file and makes the removal durable; false if there was none.
    @discardableResult
    func remove(_ id: UUID) throws(FileSystemError) -> Bool {
        let removed = try FileSystem.remove(path(of: id))
        if removed { try FileSystem.syncDirectory(directory(prefix: ImageDirectory.prefix(of: id))) }
        return removed
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
