import Glibc
import HTTP

/// A region of a file opened for a response body, written by the event loop with `sendfile(2)`.
///
/// It owns its descriptor and closes it exactly once, when the last reference goes: a response
/// that is never written (client gone, error, `HEAD`, shutdown) does not leak it. The region is
/// fixed when it is made; a file truncated later ends the connection, since the announced
/// `Content-Length` can no longer be honoured.
public final class FileRegion: ResponseFile {
    public let descriptor: Int32
    public let offset: Int
    public let length: Int

    /// Opens the regular file at `path` and takes `length` bytes from `offset`, or the rest of
    /// the file when `length` is nil. A region outside the file is `EINVAL`; a directory `EISDIR`.
    public convenience init(path: String, offset: Int = 0, length: Int? = nil) throws(SystemError) {
        let (descriptor, size) = try System.openRegularFile(path)
        let length = length ?? size - offset
        guard offset >= 0, length >= 0, offset <= size, length <= size - offset else {
            System.close(descriptor)
            throw SystemError(function: "FileRegion(offset: \(offset), length: \(length)) of \(size) bytes", errno: EINVAL)
        }
        self.init(adopting: descriptor, offset: offset, length: length)
    }

    /// Takes ownership of an open descriptor of a regular file: it is closed with this region.
    public init(adopting descriptor: Int32, offset: Int, length: Int) {
        precondition(descriptor >= 0 && offset >= 0 && length >= 0, "a file region needs a descriptor and a non-negative range")
        self.descriptor = descriptor
        self.offset = offset
        self.length = length
    }

    deinit { System.close(descriptor) }
}
