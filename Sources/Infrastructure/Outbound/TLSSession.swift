import COpenSSL
import Glibc

/// A TLS client session whose records pass through memory buffers: the socket stays ours, so
/// every byte on the wire goes through `TCPSocket` (its deadlines, no SIGPIPE) and OpenSSL
/// never blocks or touches the descriptor.
final class TLSSession {
    private let ssl: OpaquePointer
    /// Records from the network, for OpenSSL to read.
    private let incoming: OpaquePointer
    /// Records OpenSSL wrote, for us to send.
    private let outgoing: OpaquePointer
    private let host: String

    /// A session that will verify the certificate names `host`: a DNS name (also sent as SNI)
    /// or an IP address, which must be in the certificate's subjectAltName.
    init(context: TLSContext, host: String) throws(OutboundError) {
        self.host = host
        guard let ssl = SSL_new(context.pointer) else { throw OutboundError(.tlsFailed, "SSL_new: \(OpenSSLErrorQueue.drain())") }
        guard let incoming = BIO_new(BIO_s_mem()), let outgoing = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw OutboundError(.tlsFailed, "BIO_new: \(OpenSSLErrorQueue.drain())")
        }
        // The session owns both buffers from here on; SSL_free frees them.
        SSL_set_bio(ssl, incoming, outgoing)
        SSL_set_connect_state(ssl)
        self.ssl = ssl
        self.incoming = incoming
        self.outgoing = outgoing
        let named: Bool
        if Self.isIPAddress(host) {
            named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
        } else {
            named = copenssl_SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1
        }
        guard named else { throw OutboundError(.tlsFailed, "cannot verify the name \(host): \(OpenSSLErrorQueue.drain())") }
    }

    deinit { SSL_free(ssl) }

    func handshake(over socket: TCPSocket, deadline: ContinuousClock.Instant) throws(OutboundError) {
        while true {
            let result = SSL_do_handshake(ssl)
            if result == 1 { return try flush(to: socket, deadline: deadline) }
            guard SSL_get_error(ssl, result) == SSL_ERROR_WANT_READ else {
                let failure = handshakeFailure()
                // The alert that tells the server why; the failure is what matters if it cannot go.
                do { try flush(to: socket, deadline: deadline) } catch {}
                throw failure
            }
            try flush(to: socket, deadline: deadline)
            guard try feed(from: socket, deadline: deadline) else {
                throw OutboundError(.tlsFailed, "\(socket.peer) closed the connection during the TLS handshake")
            }
        }
    }

    func write(_ bytes: [UInt8], over socket: TCPSocket, deadline: ContinuousClock.Instant) throws(OutboundError) {
        var offset = 0
        while offset < bytes.count {
            let length = min(bytes.count - offset, 16_384)
            let written = bytes.withUnsafeBytes { SSL_write(ssl, $0.baseAddress! + offset, Int32(length)) }
            guard written > 0 else { throw OutboundError(.tlsFailed, "TLS write to \(socket.peer): \(OpenSSLErrorQueue.drain())") }
            offset += Int(written)
            try flush(to: socket, deadline: deadline)
        }
    }

    /// The next plaintext bytes; empty when the server has closed the connection.
    func read(over socket: TCPSocket, deadline: ContinuousClock.Instant) throws(OutboundError) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var failure: OutboundError?
        let count = buffer.withUnsafeMutableBytes { buffer in
            do throws(OutboundError) { return try read(into: buffer, over: socket, deadline: deadline) } catch {
                failure = error
                return 0
            }
        }
        if let failure { throw failure }
        return Array(buffer[..<count])
    }

    /// Decrypts into `buffer` what the server sent, at most its size; 0 once it has closed.
    func read(into buffer: UnsafeMutableRawBufferPointer, over socket: TCPSocket, deadline: ContinuousClock.Instant) throws(OutboundError)
        -> Int
    {
        while true {
            let count = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
            if count > 0 { return Int(count) }
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ:
                // What OpenSSL owes the server first (a KeyUpdate answer, say).
                try flush(to: socket, deadline: deadline)
                guard try feed(from: socket, deadline: deadline) else { return 0 }
            case SSL_ERROR_ZERO_RETURN:
                return 0
            default:
                throw OutboundError(.tlsFailed, "TLS read from \(socket.peer): \(OpenSSLErrorQueue.drain())")
            }
        }
    }

    /// Sends close_notify; best effort, since the connection is being closed anyway.
    func shutdown(over socket: TCPSocket, deadline: ContinuousClock.Instant) {
        SSL_shutdown(ssl)
        do { try flush(to: socket, deadline: deadline) } catch {}
        ERR_clear_error()
    }

    /// Sends what OpenSSL has written into `outgoing`.
    private func flush(to socket: TCPSocket, deadline: ContinuousClock.Instant) throws(OutboundError) {
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while BIO_ctrl_pending(outgoing) > 0 {
            let count = chunk.withUnsafeMutableBytes { BIO_read(outgoing, $0.baseAddress, Int32($0.count)) }
            guard count > 0 else { return }
            try socket.send(chunk[..<Int(count)], deadline: deadline)
        }
    }

    /// Hands OpenSSL the next bytes from the network; false when the server closed the connection.
    private func feed(from socket: TCPSocket, deadline: ContinuousClock.Instant) throws(OutboundError) -> Bool {
        let bytes = try socket.receive(deadline: deadline)
        guard !bytes.isEmpty else { return false }
        // A memory BIO grows to take everything.
        _ = bytes.withUnsafeBytes { BIO_write(incoming, $0.baseAddress, Int32($0.count)) }
        return true
    }

    /// certificateRejected when verification failed (untrusted, expired, another name), else tlsFailed.
    private func handshakeFailure() -> OutboundError {
        let verification = SSL_get_verify_result(ssl)
        let reason = OpenSSLErrorQueue.drain()
        guard verification == X509_V_OK else {
            let why = String(cString: X509_verify_cert_error_string(verification))
            return OutboundError(.certificateRejected, "the certificate of \(host) was refused: \(why)")
        }
        return OutboundError(.tlsFailed, "TLS handshake with \(host) failed: \(reason)")
    }

    private static func isIPAddress(_ host: String) -> Bool {
        var address = in6_addr()
        return inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1
    }
}
