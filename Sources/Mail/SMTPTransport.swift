/// The byte stream to the relay: a TCP connection, encrypted once `startTLS` has run, where each
/// connect, read and write must finish within the configured timeout. It knows nothing of SMTP.
final class SMTPTransport {
    private let socket: TCPSocket
    private var tls: TLSSession?
    private let host: String
    var timeout: Duration

    var isEncrypted: Bool { tls != nil }

    init(host: String, port: Int, timeout: Duration) throws(SMTPError) {
        self.host = host
        self.timeout = timeout
        socket = try TCPSocket.connect(host: host, port: port, deadline: .now + timeout)
    }

    /// The TLS handshake, with the certificate verified for the host we connected to; the
    /// caller must have drained all plaintext the server sent before.
    func startTLS(caFile: String?) throws(SMTPError) {
        precondition(tls == nil, "TLS started twice")
        let session = try TLSSession(context: TLSContext(caFile: caFile), host: host)
        try session.handshake(over: socket, deadline: .now + timeout)
        tls = session
    }

    func write(_ bytes: [UInt8]) throws(SMTPError) {
        let deadline = ContinuousClock.now + timeout
        if let tls { try tls.write(bytes, over: socket, deadline: deadline) } else { try socket.send(bytes, deadline: deadline) }
    }

    /// The next bytes from the server; empty when it has closed the connection.
    func read() throws(SMTPError) -> [UInt8] {
        let deadline = ContinuousClock.now + timeout
        if let tls { return try tls.read(over: socket, deadline: deadline) }
        return try socket.receive(deadline: deadline)
    }

    /// Ends TLS politely when there is time (`grace`), then closes the socket.
    func close(grace: Duration) {
        tls?.shutdown(over: socket, deadline: .now + min(grace, timeout))
        tls = nil
        socket.close()
    }
}
