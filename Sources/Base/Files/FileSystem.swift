import Glibc

/// Why a file system call failed: the operation, the path and the system's reason.
public struct FileSystemError: Error, Sendable, CustomStringConvertible {
    public let operation: String
    public let path: String
    /// The `errno` value.
    public let code: Int32

    public init(_ operation: String, _ path: String, code: Int32 = errno) {
        self.operation = operation
        self.path = path
        self.code = code
    }

    public var isNotFound: Bool { code == ENOENT }
    public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
}

/// The durable-write primitives of file-backed storage, with plain system calls (`EINTR` retried).
public enum FileSystem {
    /// `mkdir -p` with `mode` for the directories it creates.
    public static func createDirectory(_ path: String, mode: mode_t = 0o750) throws(FileSystemError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") {
            prefix += component
            if mkdir(prefix, mode) != 0, errno != EEXIST { throw FileSystemError("mkdir", prefix) }
            prefix += "/"
        }
    }

    /// Creates a new, empty directory `/tmp/<prefix>-<six random characters>` with `mode`, and
    /// returns its path. `XXXXXX` below is `mkdtemp`'s template for those characters.
    public static func createTemporaryDirectory(prefix: String, mode: mode_t = 0o700) throws(FileSystemError) -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw FileSystemError("mkdtemp", "/tmp/\(prefix)-")
        }
        let path = String(cString: made)
        chmod(path, mode)
        return path
    }

    /// Creates `path` (which must not exist), writes `bytes` and, with `sync`, waits for them to reach the disk.
    public static func writeNewFile(
        _ path: String, _ bytes: UnsafeRawBufferPointer, sync: Bool,
        mode: mode_t = 0o640
    ) throws(FileSystemError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else { throw FileSystemError("create", path) }
        // A file that could not be written whole (disk full, I/O error) is not left behind.
        func fail(_ operation: String) -> FileSystemError {
            let error = FileSystemError(operation, path)
            close(descriptor)
            unlink(path)
            return error
        }
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw fail("write")
            }
            offset += written
        }
        if sync, fsync(descriptor) != 0 { throw fail("fsync") }
        guard close(descriptor) == 0 else {
            let error = FileSystemError("close", path)
            unlink(path)
            throw error
        }
    }

    /// Atomically gives `source` the name `destination`, replacing what was there.
    public static func rename(_ source: String, to destination: String) throws(FileSystemError) {
        guard Glibc.rename(source, destination) == 0 else { throw FileSystemError("rename", source) }
    }

    /// Makes the directory's entries (a new name, a removed one) durable.
    public static func syncDirectory(_ path: String) throws(FileSystemError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw FileSystemError("open", path) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw FileSystemError("fsync", path) }
    }

    /// Removes a file; false if there was none.
    @discardableResult
    public static func remove(_ path: String) throws(FileSystemError) -> Bool {
        if unlink(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw FileSystemError("unlink", path)
    }

    /// The names in a directory (without `.` and `..`), unsorted; empty if it does not exist.
    public static func entries(of path: String) throws(FileSystemError) -> [String] {
        guard let directory = opendir(path) else {
            if errno == ENOENT { return [] }
            throw FileSystemError("opendir", path)
        }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// Seconds since the epoch of the last change to the file's contents; nil if it does not exist.
    public static func modificationTime(_ path: String) -> Int? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return Int(status.st_mtim.tv_sec)
    }
}

/// An open regular file for reading, closed when released; hands its descriptor on with `take()`.
public final class ReadableFile: @unchecked Sendable {
    private var descriptor: Int32
    /// The size when it was opened.
    public let size: Int

    /// Opens the regular file at `path` read-only: a directory is `EISDIR`, any other kind of
    /// file `EINVAL` (`O_NONBLOCK` keeps a FIFO from blocking the open).
    public init(path: String) throws(FileSystemError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw FileSystemError("open", path) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let failure = FileSystemError("fstat", path)
            close(descriptor)
            throw failure
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw FileSystemError("open", path, code: status.st_mode & S_IFMT == S_IFDIR ? EISDIR : EINVAL)
        }
        self.descriptor = descriptor
        self.size = Int(status.st_size)
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Up to `count` bytes from `offset` (fewer only at the end of the file).
    public func read(at offset: Int, count: Int) throws(FileSystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let read = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if read < 0, errno == EINTR { continue }
            guard read >= 0 else { throw FileSystemError("pread", "descriptor \(descriptor)") }
            if read == 0 { break }
            done += read
        }
        return Array(bytes.prefix(done))
    }

    /// The descriptor, now owned by the caller (who must close it).
    public func take() -> Int32 {
        let taken = descriptor
        descriptor = -1
        return taken
    }
}
