import Glibc

/// Reads whole small files (migrations, configuration, `/proc` entries) with plain system calls.
public enum FileReader {
    /// Why a file could not be read; `description` names the path and the system's reason.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public let path: String
        public let reason: String
        public var description: String { "cannot read \(path): \(reason)" }
    }

    /// The bytes of `path`, refusing files larger than `limit`.
    public static func bytes(_ path: String, limit: Int = 16 << 20) throws(Failure) -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Failure(path: path, reason: String(cString: strerror(errno))) }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
            if bytes.count > limit { throw Failure(path: path, reason: "larger than \(limit) bytes") }
        }
    }

    /// The UTF-8 text of `path`; a NUL byte or invalid UTF-8 is an error.
    public static func text(_ path: String, limit: Int = 16 << 20) throws(Failure) -> String {
        let bytes = try bytes(path, limit: limit)
        guard !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else {
            throw Failure(path: path, reason: "not UTF-8 text")
        }
        return text
    }
}
