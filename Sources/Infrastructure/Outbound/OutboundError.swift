/// Why a connection this process opened failed: a stable `code` and, for operators, what was
/// being done. Callers map it to their own errors (`SMTPError`, a key set's fetch).
public struct OutboundError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// The host could not be resolved or refused the TCP connection.
        case connectFailed = "connect_failed"
        /// A connect, a read or a write took longer than its deadline.
        case timeout
        /// The TLS handshake or a TLS record failed for a reason other than the certificate.
        case tlsFailed = "tls_failed"
        /// The server's certificate is not trusted or does not name the host we connected to.
        case certificateRejected = "certificate_rejected"
        /// The server closed the connection (or it was reset), or it was closed here.
        case connectionClosed = "connection_closed"
        /// The server answered something that is not the protocol (or more than the caller takes).
        case protocolError = "protocol_error"
    }

    public var code: Code
    public var detail: String

    public init(_ code: Code, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "OutboundError(\(code.rawValue)): \(detail)" }
}
