import Files
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

    /// Takes `length` bytes of `file` from `offset`, or the rest of it when `length` is nil, and
    /// its descriptor with them: the file is closed with this region. A region outside the file
    /// is `EINVAL`, and the file stays the caller's.
    public init(_ file: ReadableFile, offset: Int = 0, length: Int? = nil) throws(SystemError) {
        let length = length ?? file.size - offset
        guard offset >= 0, length >= 0, offset <= file.size, length <= file.size - offset else {
            throw SystemError(function: "FileRegion(offset: \(offset), length: \(length)) of \(file.size) bytes", errno: EINVAL)
        }
        self.descriptor = file.take()
        self.offset = offset
        self.length = length
    }

    deinit { System.close(descriptor) }
}
