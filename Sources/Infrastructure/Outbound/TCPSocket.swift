import CLinux
import Glibc

/// A TCP connection in non-blocking mode, where every wait is a `poll` bounded by a deadline, so
/// a silent or slow server can never hold a caller past it. The one place this module makes
/// socket system calls: `EINTR` is retried, `EAGAIN` waits, other errors become `OutboundError`s.
final class TCPSocket {
    private var descriptor: Int32
    /// "host:port", for error details.
    let peer: String

    private init(descriptor: Int32, peer: String) {
        self.descriptor = descriptor
        self.peer = peer
    }

    deinit { close() }

    /// Connects to the first address of `host` that answers, trying each in turn.
    static func connect(host: String, port: Int, deadline: ContinuousClock.Instant) throws(OutboundError) -> TCPSocket {
        let peer = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        // getaddrinfo cannot be given a deadline; the resolver's own timeouts bound it.
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else { throw OutboundError(.connectFailed, "cannot resolve \(host): \(String(cString: gai_strerror(status)))") }
        defer { freeaddrinfo(list) }
        var failure = OutboundError(.connectFailed, "no address for \(host)")
        var entry = list
        while let address = entry {
            entry = address.pointee.ai_next
            let descriptor = socket(address.pointee.ai_family, address.pointee.ai_socktype | clinux_sock_nonblock_cloexec(), 0)
            guard descriptor >= 0 else {
                failure = OutboundError(.connectFailed, "socket: \(describe(errno))")
                continue
            }
            let candidate = TCPSocket(descriptor: descriptor, peer: peer)
            do throws(OutboundError) {
                try candidate.connect(to: address.pointee.ai_addr, length: address.pointee.ai_addrlen, deadline: deadline)
                var one: Int32 = 1
                // Commands and replies alternate; a command must not wait for a delayed ACK.
                setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return candidate
            } catch {
                // The deadline is shared by all addresses: none is left for the next.
                if error.code == .timeout { throw error }
                failure = error
            }
        }
        throw failure
    }

    private func connect(to address: UnsafeMutablePointer<sockaddr>, length: socklen_t, deadline: ContinuousClock.Instant) throws(OutboundError) {
        // A non-blocking connect that was interrupted goes on in the background, like EINPROGRESS.
        if Glibc.connect(descriptor, address, length) != 0 {
            guard errno == EINPROGRESS || errno == EINTR else { throw OutboundError(.connectFailed, "connect to \(peer): \(Self.describe(errno))") }
            try wait(for: Int16(POLLOUT), until: deadline, "connecting to \(peer)")
            var error: Int32 = 0
            var size = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &size) == 0 else {
                throw OutboundError(.connectFailed, "connect to \(peer): \(Self.describe(errno))")
            }
            guard error == 0 else { throw OutboundError(.connectFailed, "connect to \(peer): \(Self.describe(error))") }
        }
    }

    /// Sends all of `bytes` before `deadline`.
    func send(_ bytes: some Collection<UInt8>, deadline: ContinuousClock.Instant) throws(OutboundError) {
        let bytes = Array(bytes)
        var offset = 0
        while offset < bytes.count {
            // MSG_NOSIGNAL: a server that went away is EPIPE here, not a SIGPIPE that ends the process.
            let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent >= 0 {
                offset += sent
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                try wait(for: Int16(POLLOUT), until: deadline, "sending to \(peer)")
            } else if errno != EINTR {
                throw OutboundError(.connectionClosed, "send to \(peer): \(Self.describe(errno))")
            }
        }
    }

    /// The next bytes from the server, at most `limit`; empty when it has closed its side.
    func receive(limit: Int = 16_384, deadline: ContinuousClock.Instant) throws(OutboundError) -> [UInt8] {
        var failure: OutboundError?
        let bytes = [UInt8](unsafeUninitializedCapacity: limit) { buffer, initialized in
            do throws(OutboundError) {
                initialized = try receive(into: UnsafeMutableRawBufferPointer(buffer), deadline: deadline)
            } catch {
                initialized = 0
                failure = error
            }
        }
        if let failure { throw failure }
        return bytes
    }

    /// Receives into `buffer` what the server sent, at most its size; 0 when it has closed its side.
    func receive(into buffer: UnsafeMutableRawBufferPointer, deadline: ContinuousClock.Instant) throws(OutboundError) -> Int {
        while true {
            if let count = try receiveIfReady(into: buffer) { return count }
            try wait(for: Int16(POLLIN), until: deadline, "waiting for \(peer)")
        }
    }

    /// Receives into `buffer` what the server sent and the kernel holds, without waiting: nil
    /// when nothing has come; 0 when the server has closed its side.
    func receiveIfReady(into buffer: UnsafeMutableRawBufferPointer) throws(OutboundError) -> Int? {
        while true {
            // ACK at once what comes: a peer that writes an answer's head and body apart, with
            // Nagle's algorithm on (RADOS Gateway's default), holds the body until the head is
            // acknowledged, which a delayed ACK would make 40 ms.
            var one: Int32 = 1
            setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_QUICKACK, &one, socklen_t(MemoryLayout<Int32>.size))
            let count = recv(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if count >= 0 { return count }
            if errno == EAGAIN || errno == EWOULDBLOCK { return nil }
            if errno != EINTR { throw OutboundError(.connectionClosed, "receive from \(peer): \(Self.describe(errno))") }
        }
    }

    func close() {
        guard descriptor >= 0 else { return }
        // Not retried on EINTR: Linux releases the descriptor whatever close returns.
        Glibc.close(descriptor)
        descriptor = -1
    }

    /// Returns once the socket is ready for `events` (or has an error for the next call to
    /// report); throws `timeout` when `deadline` passes first.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant, _ operation: String) throws(OutboundError) {
        while true {
            let left = deadline - .now
            guard left > .zero else { throw OutboundError(.timeout, "\(operation) timed out") }
            let (seconds, attoseconds) = left.components
            // Rounded up: a wait of 0 ms would spin until the deadline.
            let milliseconds = min(seconds * 1000 + attoseconds / 1_000_000_000_000_000 + 1, Int64(Int32.max))
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&entry, 1, Int32(milliseconds))
            if ready > 0 { return }
            if ready < 0, errno != EINTR { throw OutboundError(.connectionClosed, "poll: \(Self.describe(errno))") }
        }
    }

    private static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}
