import COpenSSL

/// The client TLS settings of a connection: TLS 1.2 or later, and the server's certificate
/// verified against the system's trust store or, when given, a PEM bundle of our own.
final class TLSContext {
    let pointer: OpaquePointer

    init(caFile: String?) throws(OutboundError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw OutboundError(.tlsFailed, "SSL_CTX_new: \(OpenSSLErrorQueue.drain())")
        }
        pointer = context
        guard copenssl_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw OutboundError(.tlsFailed, "cannot require TLS 1.2: \(OpenSSLErrorQueue.drain())")
        }
        // Without a callback, a certificate that fails verification fails the handshake.
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        if let caFile {
            guard SSL_CTX_load_verify_file(context, caFile) == 1 else {
                throw OutboundError(.tlsFailed, "cannot load the CA file \(caFile): \(OpenSSLErrorQueue.drain())")
            }
        } else {
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw OutboundError(.tlsFailed, "cannot load the system's trusted certificates: \(OpenSSLErrorQueue.drain())")
            }
        }
    }

    deinit { SSL_CTX_free(pointer) }
}
