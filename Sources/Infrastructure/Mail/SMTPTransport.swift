import Outbound

/// The byte stream to the relay (`ByteStream`), its faults as `SMTPError`s. It knows nothing of SMTP.
final class SMTPTransport {
    private let stream: ByteStream

    var isEncrypted: Bool { stream.isEncrypted }

    var timeout: Duration {
        get { stream.timeout }
        set { stream.timeout = newValue }
    }

    init(host: String, port: Int, timeout: Duration) throws(SMTPError) {
        do throws(OutboundError) { stream = try ByteStream(host: host, port: port, timeout: timeout) } catch { throw SMTPError(error) }
    }

    func startTLS(caFile: String?) throws(SMTPError) {
        do throws(OutboundError) { try stream.startTLS(caFile: caFile) } catch { throw SMTPError(error) }
    }

    func write(_ bytes: [UInt8]) throws(SMTPError) {
        do throws(OutboundError) { try stream.write(bytes) } catch { throw SMTPError(error) }
    }

    func read() throws(SMTPError) -> [UInt8] {
        do throws(OutboundError) { return try stream.read() } catch { throw SMTPError(error) }
    }

    func close(grace: Duration) { stream.close(grace: grace) }
}

extension SMTPError {
    init(_ error: OutboundError) {
        let code: Code
        switch error.code {
        case .connectFailed: code = .connectFailed
        case .timeout: code = .timeout
        case .tlsFailed: code = .tlsFailed
        case .certificateRejected: code = .certificateRejected
        case .connectionClosed: code = .connectionClosed
        case .protocolError: code = .protocolError
        }
        self.init(code, error.detail)
    }
}
