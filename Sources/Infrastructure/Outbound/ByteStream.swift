/// A byte stream to a server: a TCP connection, encrypted once `startTLS` has run, where each
/// connect, read and write must finish within `timeout`. It knows nothing of the protocol spoken
/// over it (SMTP, HTTP).
public final class ByteStream {
    private let socket: TCPSocket
    private var tls: TLSSession?
    private let host: String
    public var timeout: Duration

    public var isEncrypted: Bool { tls != nil }

    /// Connects to `host`, or to `address` when one is given (an operator's or a test's fixed
    /// address for a name, like curl's `--resolve`): TLS still verifies `host`.
    public init(host: String, port: Int, timeout: Duration, address: String? = nil) throws(OutboundError) {
        self.host = host
        self.timeout = timeout
        socket = try TCPSocket.connect(host: address ?? host, port: port, deadline: .now + timeout)
    }

    /// The TLS handshake, with the certificate verified for the host we connected to, against
    /// the system's trust store or `caFile`; the caller must have drained all plaintext the
    /// server sent before.
    public func startTLS(caFile: String?) throws(OutboundError) {
        precondition(tls == nil, "TLS started twice")
        let session = try TLSSession(context: TLSContext(caFile: caFile), host: host)
        try session.handshake(over: socket, deadline: .now + timeout)
        tls = session
    }

    public func write(_ bytes: [UInt8]) throws(OutboundError) {
        let deadline = ContinuousClock.now + timeout
        if let tls { try tls.write(bytes, over: socket, deadline: deadline) } else { try socket.send(bytes, deadline: deadline) }
    }

    /// The next bytes from the server, at most `limit` (a TLS record's at most); empty when it
    /// has closed the connection.
    public func read(limit: Int = 16_384) throws(OutboundError) -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        if let tls { return try tls.read(over: socket, deadline: deadline) }
        return try socket.receive(limit: limit, deadline: deadline)
    }

    /// Reads into `buffer` the next bytes from the server, at most its size; 0 when it has closed
    /// the connection. No allocation: for a caller that fills a buffer of its own.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(OutboundError) -> Int {
        let deadline = ContinuousClock.now + timeout
        if let tls { return try tls.read(into: buffer, over: socket, deadline: deadline) }
        return try socket.receive(into: buffer, deadline: deadline)
    }

    /// `read(into:)` of what has come already, without waiting: nil when nothing has, and always
    /// over TLS (a record may have come in part: a caller that may not wait reads on a thread).
    public func readIfReady(into buffer: UnsafeMutableRawBufferPointer) throws(OutboundError) -> Int? {
        guard tls == nil else { return nil }
        return try socket.receiveIfReady(into: buffer)
    }

    /// Ends TLS politely when there is time (`grace`), then closes the socket.
    public func close(grace: Duration) {
        tls?.shutdown(over: socket, deadline: .now + min(grace, timeout))
        tls = nil
        socket.close()
    }
}
