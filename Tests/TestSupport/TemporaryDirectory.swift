import Glibc

/// A new, empty directory `/tmp/<prefix>-<random>`, readable by others: a managed PostgreSQL
/// started inside it runs as the `postgres` user when the tests run as root.
/// (`XXXXXX` is mkdtemp's template for the random part, not a placeholder.)
public func makeTemporaryDirectory(_ prefix: String) throws -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw TemporaryDirectoryError(errno: errno)
    }
    let path = String(cString: made)
    chmod(path, 0o755)
    return path
}

/// `mkdtemp` failed.
public struct TemporaryDirectoryError: Error, CustomStringConvertible {
    public let errno: Int32
    public var description: String { "mkdtemp: \(String(cString: strerror(errno)))" }
}
