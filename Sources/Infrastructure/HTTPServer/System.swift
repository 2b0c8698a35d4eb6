import CLinux
import Glibc

/// An `errno` from a failed system call, with the call's name.
public struct SystemError: Error, Sendable, CustomStringConvertible {
    public let function: String
    public let errno: Int32

    public var description: String { "\(function): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// The one place system calls are made: `EINTR` is retried, `EAGAIN` becomes nil, errors throw.
public enum System {
    public static var coreCount: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// Monotonic nanoseconds.
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    static func wallClockSeconds() -> Int {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return ts.tv_sec
    }

    @inline(__always)
    static func retrying<T: FixedWidthInteger>(_ function: String, _ body: () -> T) throws(SystemError) -> T? {
        while true {
            let result = body()
            if result >= 0 { return result }
            let error = Glibc.errno
            if error == EINTR { continue }
            if error == EAGAIN || error == EWOULDBLOCK { return nil }
            throw SystemError(function: function, errno: error)
        }
    }

    /// Raises the soft open-file limit to the hard one (where it is lower) and returns the
    /// soft limit in force afterwards; nil when it cannot be read, `Int.max` for no limit.
    public static func raiseOpenFileLimit() -> Int? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        // RLIM_INFINITY is all ones; Glibc's macro does not import into Swift.
        return limit.rlim_cur >= UInt(Int.max) ? Int.max : Int(limit.rlim_cur)
    }

    /// Whether an `accept` error means the process or the system is out of descriptors or
    /// memory: retrying at once would fail the same way, and spin.
    static func isExhaustion(_ error: SystemError) -> Bool {
        [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(error.errno)
    }

    static func read(_ fd: Int32, _ buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int? {
        try retrying("read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// `more`: further bytes follow at once (a file body after its head), so the kernel may hold
    /// a part-filled segment for them (`MSG_MORE`) instead of sending it alone.
    static func write(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, more: Bool = false) throws(SystemError) -> Int? {
        // MSG_NOSIGNAL: a peer that went away is an EPIPE error here, not a SIGPIPE.
        let flags = more ? Int32(MSG_NOSIGNAL) | Int32(MSG_MORE) : Int32(MSG_NOSIGNAL)
        return try retrying("send") { Glibc.send(fd, buffer.baseAddress, buffer.count, flags) }
    }

    /// Copies up to `count` bytes of the file `input` from `offset` to the socket `output` in the
    /// kernel, and advances `offset`; 0 means the file ended before `offset + count`.
    ///
    /// Unlike `send` it cannot be told `MSG_NOSIGNAL`: threads that call it block `SIGPIPE`
    /// (`blockBrokenPipeSignal`), so a peer that went away is an `EPIPE` error here too.
    static func sendfile(_ output: Int32, from input: Int32, offset: inout Int, count: Int) throws(SystemError) -> Int? {
        var position = off_t(offset)
        let sent = try retrying("sendfile") { CLinux.sendfile(output, input, &position, count) }
        offset = Int(position)
        return sent
    }

    /// Blocks `SIGPIPE` for the calling thread only; one left pending there is harmless.
    static func blockBrokenPipeSignal() {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    static func accept(_ fd: Int32) throws(SystemError) -> Int32? {
        try retrying("accept4") { CLinux.accept4(fd, nil, nil, clinux_sock_nonblock_cloexec()) }
    }

    static func close(_ fd: Int32) {
        // Linux closes the descriptor even when close reports EINTR, so it is never retried.
        _ = Glibc.close(fd)
    }

    static func shutdownWrite(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    static func epollCreate() throws(SystemError) -> Int32 {
        guard let fd = try retrying("epoll_create1", { CLinux.epoll_create1(Int32(EPOLL_CLOEXEC)) }) else {
            throw SystemError(function: "epoll_create1", errno: EAGAIN)
        }
        return fd
    }

    static func epollControl(_ epfd: Int32, _ op: Int32, _ fd: Int32, events: UInt32, data: UInt64) throws(SystemError) {
        var event = epoll_event()
        event.events = events
        event.data.u64 = data
        _ = try retrying("epoll_ctl") { CLinux.epoll_ctl(epfd, op, fd, &event) }
    }

    static func eventFD() throws(SystemError) -> Int32 {
        guard let fd = try retrying("eventfd", { CLinux.eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }) else {
            throw SystemError(function: "eventfd", errno: EAGAIN)
        }
        return fd
    }

    /// A non-blocking listening TCP socket with `SO_REUSEPORT`, bound to host and port.
    ///
    /// `SO_REUSEPORT` lets the event loops share one port, but it would also let a second
    /// server of the same user join silently and take half the traffic; `probeFirst` binds a
    /// plain socket first, so a port already in use is an error.
    static func listen(host: String, port: Int, probeFirst: Bool = false, backlog: Int32 = 4096) throws(SystemError) -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var info: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &info)
        guard status == 0, let first = info else { throw SystemError(function: "getaddrinfo(\(host))", errno: EINVAL) }
        defer { freeaddrinfo(info) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype | clinux_sock_nonblock_cloexec(), 0)
        guard fd >= 0 else { throw SystemError(function: "socket", errno: Glibc.errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if probeFirst, port != 0 {
            let probe = socket(first.pointee.ai_family, first.pointee.ai_socktype | clinux_sock_nonblock_cloexec(), 0)
            setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            let status = bind(probe, first.pointee.ai_addr, first.pointee.ai_addrlen)
            let error = Glibc.errno
            Glibc.close(probe)
            if status != 0 {
                Glibc.close(fd)
                throw SystemError(function: "bind(\(host):\(port))", errno: error)
            }
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else {
            let error = Glibc.errno
            Glibc.close(fd)
            throw SystemError(function: "bind(\(host):\(port))", errno: error)
        }
        guard Glibc.listen(fd, backlog) == 0 else {
            let error = Glibc.errno
            Glibc.close(fd)
            throw SystemError(function: "listen", errno: error)
        }
        return fd
    }

    /// The port a socket is bound to.
    static func boundPort(_ fd: Int32) -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        if storage.ss_family == sa_family_t(AF_INET6) {
            return withUnsafePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            }
        }
        return withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
        }
    }

    /// The peer's address as text, for logs and rate limits.
    static func peerAddress(_ fd: Int32) -> String {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
        }
        guard ok else { return "unknown" }
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        let status = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getnameinfo($0, length, &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST)
            }
        }
        guard status == 0 else { return "unknown" }
        return String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Bounds the socket's send buffer (Linux doubles the value for its bookkeeping, and stops
    /// growing the buffer on its own).
    static func setSendBuffer(_ fd: Int32, bytes: Int) {
        var size = Int32(clamping: bytes)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    static func setNoDelay(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }
}
