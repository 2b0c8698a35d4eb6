import Dispatch
import Glibc
import Synchronization

/// A TCP socket bound to a loopback port, listening only when given a backlog. Its owner calls
/// `close()`.
///
/// Not listening, it holds a port on which connecting is refused, and that no other process can
/// bind and start listening on meanwhile (as could happen to a port found free and closed again).
public struct LoopbackSocket: Sendable {
    public let fd: Int32
    public let port: Int

    /// Binds `port` (0: one the kernel picks from its ephemeral range) on 127.0.0.1, and listens
    /// with `backlog` when it is given; throws when the port is taken.
    public init(port: Int = 0, listening backlog: Int32? = nil) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && backlog.map { listen(fd, $0) == 0 } != false && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else {
            let error = errno
            Glibc.close(fd)
            throw TestFailure("bind or listen on 127.0.0.1:\(port): errno \(error)")
        }
        self.fd = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
    }

    public func close() { Glibc.close(fd) }
}

/// A TCP socket listening on a free loopback port that never accepts: the kernel completes a
/// client's handshake (up to the backlog), and then nothing is ever said. A server that hangs, or
/// a pooler holding its clients while it has no server to give them. Its owner calls `close()`.
public struct SilentListener: Sendable {
    private let socket: LoopbackSocket
    public var fd: Int32 { socket.fd }
    public var port: Int { socket.port }

    public init(backlog: Int32 = 64) throws {
        socket = try LoopbackSocket(listening: backlog)
    }

    /// Accepts, and closes, the connections waiting in the backlog; how many there were.
    public func takePendingConnections() -> Int {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        var count = 0
        while true {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return count }
            _ = Glibc.close(connection)
            count += 1
        }
    }

    /// Runs `body`, a client of this listener that must give up on its own (its timeout), while a
    /// watchdog waits up to `deadline`, far beyond any slow machine: if `body` has not returned by
    /// then, the watchdog shuts the listening socket down, which resets every connection waiting
    /// in its backlog, so that a client without a working timeout fails (with a reset, not its
    /// timeout) instead of hanging the suite. Returns what `body` returned, and whether it
    /// returned while the listener was still silent, before the watchdog hung up.
    public func whileSilent<T>(atMost deadline: Duration = .seconds(30), _ body: () throws -> T) rethrows -> (result: T, beforeTheHangUp: Bool) {
        let returned = DispatchSemaphore(value: 0)
        let watchdogDone = DispatchSemaphore(value: 0)
        let hungUp = Atomic<Bool>(false)
        let fd = socket.fd
        let seconds = Double(deadline.components.seconds) + Double(deadline.components.attoseconds) / 1e18
        DispatchQueue.global().async {
            if returned.wait(timeout: .now() + seconds) == .timedOut {
                hungUp.store(true, ordering: .sequentiallyConsistent)
                _ = shutdown(fd, Int32(SHUT_RDWR))
            }
            watchdogDone.signal()
        }
        // The watchdog is done before the listener can be closed: it never shuts down a reused fd.
        defer {
            returned.signal()
            watchdogDone.wait()
        }
        let result = try body()
        return (result, !hungUp.load(ordering: .sequentiallyConsistent))
    }

    public func close() { socket.close() }
}
