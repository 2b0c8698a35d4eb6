import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A session store that keeps the session in one file that only its owner may read or write
/// (mode 0600), replaced atomically. The default on Linux; on Apple platforms prefer
/// `KeychainSessionStore`.
public struct FileSessionStore: SessionStore {
    /// The file.
    public let url: URL

    /// A store at `url`; its directory is created (mode 0700) at the first save.
    public init(url: URL) {
        self.url = url
    }

    /// `$XDG_DATA_HOME/exosphere/<name>.session` (`~/.local/share/...` without it).
    public static func defaultURL(name: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_DATA_HOME"].map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? URL(fileURLWithPath: NSHomeDirectory(), isDirectory: true).appendingPathComponent(".local/share", isDirectory: true)
        return base.appendingPathComponent("exosphere", isDirectory: true).appendingPathComponent(name + ".session")
    }

    /// The file's contents, or nil when there is no file.
    public func load() throws -> Data? {
        do {
            return try Data(contentsOf: url)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return nil
        }
    }

    /// Writes a temporary file created with mode 0600 (never readable by others, not even for a
    /// moment), flushes it, and renames it over the old one.
    public func save(_ session: Data) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileSessionStore.posixError("open") }
        var written = 0
        let failure: (any Error)? = session.withUnsafeBytes { bytes -> (any Error)? in
            while written < bytes.count {
                let result = write(fd, bytes.baseAddress! + written, bytes.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return FileSessionStore.posixError("write")
                }
                written += result
            }
            return fsync(fd) == 0 ? nil : FileSessionStore.posixError("fsync")
        }
        close(fd)
        if let failure {
            unlink(temporary.path)
            throw failure
        }
        guard rename(temporary.path, url.path) == 0 else {
            let error = FileSessionStore.posixError("rename")
            unlink(temporary.path)
            throw error
        }
    }

    /// Removes the file.
    public func clear() throws {
        guard unlink(url.path) == 0 || errno == ENOENT else { throw FileSessionStore.posixError("unlink") }
    }

    private static func posixError(_ call: String) -> any Error {
        NSError(domain: NSPOSIXErrorDomain, code: Int(errno), userInfo: [NSLocalizedDescriptionKey: "\(call): \(String(cString: strerror(errno)))"])
    }
}
