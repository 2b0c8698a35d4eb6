import Glibc

/// A TCP socket listening on a free loopback port that never accepts: the kernel completes a
/// client's handshake (up to the backlog), and then nothing is ever said. A server that hangs, or
/// a pooler holding its clients while it has no server to give them. Its owner calls `close()`.
public struct SilentListener: Sendable {
    public let fd: Int32
    public let port: Int

    public init(backlog: Int32 = 64) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && listen(fd, backlog) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            let error = errno
            Glibc.close(fd)
            throw TestFailure("bind or listen: errno \(error)")
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    public func close() { Glibc.close(fd) }
}
