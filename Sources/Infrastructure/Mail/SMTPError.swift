/// Why a message could not be handed to the relay: a stable `code`, the server's reply when there
/// was one, and whether retrying the same message can ever succeed.
///
/// Nothing here contains the password: details are written by this module without it, and the
/// server's replies are redacted before they are stored (a server may echo what it was sent).
public struct SMTPError: Error, Sendable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    public enum Code: String, Sendable, CaseIterable {
        /// The `--smtp-url` is malformed or uses a scheme we do not speak.
        case invalidURL = "invalid_url"
        /// The host could not be resolved or refused the TCP connection, or the server refused the session.
        case connectFailed = "connect_failed"
        /// A connect, a read or a write took longer than the configured timeout.
        case timeout
        /// The TLS handshake or a TLS record failed for a reason other than the certificate.
        case tlsFailed = "tls_failed"
        /// The server's certificate is not trusted or does not name the host we connected to.
        case certificateRejected = "certificate_rejected"
        /// `smtp://` requires STARTTLS and the server does not offer it (or refused it).
        case startTLSUnavailable = "starttls_unavailable"
        /// The server refused our credentials, offers no mechanism we speak, or would get them unencrypted.
        case authenticationFailed = "authentication_failed"
        /// The server refused the sender, the recipient or the message.
        case rejected
        /// The server said something that is not SMTP, or not what the protocol allows at that point.
        case protocolError = "protocol_error"
        /// The server closed the connection (or it was reset), or this client was closed.
        case connectionClosed = "connection_closed"
    }

    public var code: Code
    /// The server's reply, e.g. "550 5.1.1 <x@y>: no such user", when the error is one.
    public var reply: String?
    /// True for a 5xx reply to MAIL, RCPT or DATA: this message will never be accepted, so a
    /// sender should give up on it rather than retry. False for 4xx replies and every network,
    /// timeout and TLS fault.
    public var isPermanent: Bool
    /// What we were doing and what went wrong, for operators.
    public var detail: String

    public init(_ code: Code, _ detail: String, reply: String? = nil, isPermanent: Bool = false) {
        self.code = code
        self.detail = detail
        self.reply = reply
        self.isPermanent = isPermanent
    }

    public var description: String {
        if let reply { "SMTPError(\(code.rawValue)): \(detail) (server: \(reply))" } else { "SMTPError(\(code.rawValue)): \(detail)" }
    }
}
