/// One SMTP session (RFC 5321), blocking, over our own socket; TLS through OpenSSL.
///
/// A rejection (a 4xx or 5xx reply) leaves the session usable: `reset()` and send the next
/// message. A network, timeout, TLS or protocol fault closes it; every later call then throws
/// `connectionClosed`, and the caller connects again.
public final class SMTPClient {
    private let configuration: SMTPConfiguration
    private var transport: SMTPTransport?
    /// Bytes received and not yet parsed into a reply.
    private var received: [UInt8] = []
    private let parser = SMTPReplyParser()
    private var capabilities = SMTPCapabilities()
    /// What must never appear in an error: the password and the AUTH lines that carry it.
    private let secrets: [String]

    private init(configuration: SMTPConfiguration, transport: SMTPTransport) {
        self.configuration = configuration
        self.transport = transport
        var secrets: [String] = []
        if let username = configuration.username, let password = configuration.password, !password.isEmpty {
            secrets = [password, MailBase64.encode(Array(password.utf8)), MailBase64.encode(Array("\0\(username)\0\(password)".utf8))]
        }
        self.secrets = secrets
    }

    deinit { transport?.close(grace: .zero) }

    /// Connects, reads the greeting, says EHLO, upgrades with STARTTLS (for `.startTLS`) and
    /// says EHLO again, then authenticates when a user name is configured: PLAIN if offered,
    /// else LOGIN, and never unencrypted unless the host is loopback.
    public static func connect(_ configuration: SMTPConfiguration) throws(SMTPError) -> SMTPClient {
        let name = configuration.heloName
        guard !name.isEmpty, name.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw SMTPError(.invalidURL, "the HELO name '\(HeaderField.singleLine(name))' is not a domain name or address literal")
        }
        if configuration.username != nil {
            guard configuration.security != .none || configuration.isLoopback else {
                throw SMTPError(.authenticationFailed, "refusing to send credentials unencrypted to \(configuration.host)")
            }
            guard configuration.password != nil else {
                throw SMTPError(.authenticationFailed, "a user name is configured for \(configuration.host) but no password")
            }
        }
        let transport = try SMTPTransport(host: configuration.host, port: configuration.port, timeout: configuration.timeout)
        let client = SMTPClient(configuration: configuration, transport: transport)
        do throws(SMTPError) {
            try client.open()
        } catch {
            client.close()
            throw error
        }
        return client
    }

    private func open() throws(SMTPError) {
        if configuration.security == .implicitTLS { try startTLS() }
        let greeting = try readReply()
        guard greeting.code == 220 else {
            if greeting.isTransientFailure || greeting.isPermanentFailure {
                throw SMTPError(.connectFailed, "\(configuration.host) refused the session", reply: redacted(greeting))
            }
            throw SMTPError(.protocolError, "\(configuration.host) did not greet with 220", reply: redacted(greeting))
        }
        try hello()
        if configuration.security == .startTLS {
            guard capabilities.supports("STARTTLS") else {
                throw SMTPError(.startTLSUnavailable, "\(configuration.host) does not offer STARTTLS, which smtp:// requires")
            }
            let reply = try command("STARTTLS")
            guard reply.code == 220 else { throw SMTPError(.startTLSUnavailable, "\(configuration.host) refused STARTTLS", reply: redacted(reply)) }
            // RFC 3207 §4.2 and CVE-2011-0411: plaintext pipelined behind the 220 would pass for
            // replies received over TLS.
            guard received.isEmpty else {
                throw SMTPError(.protocolError, "\(configuration.host) sent data after its STARTTLS reply, before the TLS handshake")
            }
            try startTLS()
            // What the server offered before TLS no longer counts (RFC 3207 §4.2).
            try hello()
        }
        if let username = configuration.username { try authenticate(username: username, password: configuration.password ?? "") }
    }

    /// EHLO, or HELO for a server that does not know it (and then offers no extension).
    private func hello() throws(SMTPError) {
        let reply = try command("EHLO \(configuration.heloName)")
        if reply.isPositiveCompletion {
            capabilities = SMTPCapabilities(ehloReply: reply)
            return
        }
        let fallback = try command("HELO \(configuration.heloName)")
        guard fallback.isPositiveCompletion else {
            throw SMTPError(.rejected, "\(configuration.host) refused EHLO and HELO", reply: redacted(fallback))
        }
        capabilities = SMTPCapabilities()
    }

    private func authenticate(username: String, password: String) throws(SMTPError) {
        guard transport?.isEncrypted == true || configuration.isLoopback else {
            throw SMTPError(.authenticationFailed, "refusing to send credentials unencrypted to \(configuration.host)")
        }
        let mechanisms = capabilities.authenticationMechanisms
        let reply: SMTPReply
        if mechanisms.contains("PLAIN") {
            // RFC 4616: authorization identity (empty: the same), NUL, user, NUL, password.
            reply = try command("AUTH PLAIN " + MailBase64.encode(Array("\0\(username)\0\(password)".utf8)))
        } else if mechanisms.contains("LOGIN") {
            // draft-murchison-sasl-login: the server prompts for the user name, then the password.
            var prompt = try command("AUTH LOGIN")
            guard prompt.code == 334 else { throw authenticationFailure(prompt) }
            prompt = try command(MailBase64.encode(Array(username.utf8)))
            guard prompt.code == 334 else { throw authenticationFailure(prompt) }
            reply = try command(MailBase64.encode(Array(password.utf8)))
        } else {
            let offered = mechanisms.isEmpty ? "none" : mechanisms.joined(separator: " ")
            throw SMTPError(.authenticationFailed, "\(configuration.host) offers no AUTH mechanism we speak (PLAIN, LOGIN); offered: \(offered)")
        }
        guard reply.code == 235 else { throw authenticationFailure(reply) }
    }

    private func authenticationFailure(_ reply: SMTPReply) -> SMTPError {
        SMTPError(.authenticationFailed, "\(configuration.host) refused the credentials of \(configuration.username ?? "")", reply: redacted(reply))
    }

    /// MAIL FROM, RCPT TO, DATA with dot-stuffing and the final "."; returns the server's final
    /// reply (e.g. "250 2.0.0 Ok: queued as 4F2A"). SMTPUTF8 and 8BITMIME are asked for only
    /// when an address is not ASCII, and refused when the server does not offer them.
    @discardableResult
    public func send(_ message: MailMessage) throws(SMTPError) -> String {
        for address in [message.from.address, message.to.address] where !MailAddress.isValid(address: address) {
            throw SMTPError(.rejected, "'\(HeaderField.singleLine(address))' is not an address we can send to", isPermanent: true)
        }
        let bytes = message.rendered()
        var parameters = ""
        if !(message.from.address + message.to.address).unicodeScalars.allSatisfy(\.isASCII) {
            guard capabilities.supports("SMTPUTF8"), capabilities.supports("8BITMIME") else {
                throw SMTPError(.rejected, "\(configuration.host) does not offer SMTPUTF8, which a non-ASCII address needs", isPermanent: true)
            }
            parameters = " BODY=8BITMIME SMTPUTF8"
        }
        let from = try command("MAIL FROM:<\(message.from.address)>\(parameters)")
        guard from.isPositiveCompletion else { throw rejection(from, "the sender <\(message.from.address)>") }
        let recipient = try command("RCPT TO:<\(message.to.address)>")
        guard recipient.isPositiveCompletion else { throw rejection(recipient, "the recipient <\(message.to.address)>") }
        let data = try command("DATA")
        guard data.code == 354 else {
            if data.isPositiveCompletion { throw SMTPError(.protocolError, "\(configuration.host) answered DATA without 354", reply: redacted(data)) }
            throw rejection(data, "DATA")
        }
        try write(DotStuffing.encode(bytes))
        let final = try readReply()
        guard final.isPositiveCompletion else { throw rejection(final, "the message") }
        return redacted(final)
    }

    /// RSET: abandons the current transaction, between the messages of a batch after a failed one.
    public func reset() throws(SMTPError) {
        let reply = try command("RSET")
        guard reply.isPositiveCompletion else { throw SMTPError(.rejected, "\(configuration.host) refused RSET", reply: redacted(reply)) }
    }

    /// QUIT (best effort, a few seconds at most) and close the connection.
    public func close() {
        guard let transport else { return }
        transport.timeout = min(transport.timeout, .seconds(5))
        // Whatever the server answers to QUIT, the messages it accepted are its own now.
        do { _ = try command("QUIT") } catch {}
        self.transport?.close(grace: .seconds(1))
        self.transport = nil
    }

    private func rejection(_ reply: SMTPReply, _ subject: String) -> SMTPError {
        SMTPError(.rejected, "\(configuration.host) refused \(subject)", reply: redacted(reply), isPermanent: reply.isPermanentFailure)
    }

    /// Sends one command line and reads its reply.
    private func command(_ line: String) throws(SMTPError) -> SMTPReply {
        precondition(!line.contains("\r") && !line.contains("\n"), "an SMTP command line holds a line end")
        try write(Array((line + "\r\n").utf8))
        return try readReply()
    }

    private func readReply() throws(SMTPError) -> SMTPReply {
        while true {
            switch parser.parse(received) {
            case .complete(let reply, let consumed):
                received.removeFirst(consumed)
                return reply
            case .needMore:
                let bytes = try read()
                guard !bytes.isEmpty else {
                    abandon()
                    throw SMTPError(.connectionClosed, "\(configuration.host) closed the connection")
                }
                received += bytes
            case .malformed(let reason):
                abandon()
                throw SMTPError(.protocolError, "\(configuration.host) sent a malformed reply: \(reason)")
            }
        }
    }

    // A fault in the transport leaves the session in an unknown state: the connection is dropped.

    private func startTLS() throws(SMTPError) {
        let transport = try openTransport()
        do throws(SMTPError) { try transport.startTLS(caFile: configuration.caFile) } catch {
            abandon()
            throw error
        }
    }

    private func write(_ bytes: [UInt8]) throws(SMTPError) {
        let transport = try openTransport()
        do throws(SMTPError) { try transport.write(bytes) } catch {
            abandon()
            throw error
        }
    }

    private func read() throws(SMTPError) -> [UInt8] {
        let transport = try openTransport()
        do throws(SMTPError) { return try transport.read() } catch {
            abandon()
            throw error
        }
    }

    private func openTransport() throws(SMTPError) -> SMTPTransport {
        guard let transport else { throw SMTPError(.connectionClosed, "the connection to \(configuration.host) is closed") }
        return transport
    }

    private func abandon() {
        transport?.close(grace: .zero)
        transport = nil
        received = []
    }

    /// The reply as text, with anything that could be a secret of ours removed.
    private func redacted(_ reply: SMTPReply) -> String {
        secrets.reduce(reply.description) { $0.replacing($1, with: "[redacted]") }
    }
}
