import TestSupport
import Foundation
import Glibc
import Testing

@testable import Mail

/// The client against a real SMTP server (aiosmtpd, `smtp_server.py`) on a loopback port.
@Suite(.testThreads) struct SMTPClientTests {
    static let date = Date(timeIntervalSince1970: 1_770_109_507)

    private func message(to recipient: String = "budi@example.org", subject: String = "Reset your password") -> MailMessage {
        MailMessage(
            from: MailAddress("no-reply@sehat.id", displayName: "Aplikasi Sehat"), to: MailAddress(recipient, displayName: "Budi"),
            subject: subject, text: "Halo Budi,\n.\n.x\nselesai.\n", date: Self.date, messageID: "\(UUID().uuidString)@sehat.id")
    }

    private func configuration(_ url: String, caFile: String? = nil, timeout: Duration = .seconds(10)) throws -> SMTPConfiguration {
        var configuration = try SMTPConfiguration(url: url)
        configuration.caFile = caFile
        configuration.timeout = timeout
        return configuration
    }

    /// Expects `body` to throw an `SMTPError` with `code`, and returns it.
    @discardableResult
    private func expectError(
        _ code: SMTPError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
    ) -> SMTPError? {
        let error = #expect(throws: SMTPError.self, sourceLocation: sourceLocation) { try body() }
        #expect(error?.code == code, "\(error?.description ?? "")", sourceLocation: sourceLocation)
        return error
    }

    @Test func plainToLoopbackWithAuthPlain() throws {
        let server = try TestSMTPServer(["--auth", "kirim:rahasia p@ss"])
        defer { server.stop() }
        let client = try SMTPClient.connect(configuration("smtp+plain://kirim:rahasia%20p%40ss@127.0.0.1:\(server.port)"))
        let reply = try client.send(message())
        client.close()
        #expect(reply == "250 2.0.0 OK queued as 1")
        let delivery = try server.delivery(1)
        #expect(delivery.login == "kirim" && delivery.authMechanism == "PLAIN" && !delivery.tls)
        #expect(delivery.mailFrom == "no-reply@sehat.id" && delivery.rcptTos == ["budi@example.org"])
        #expect(delivery.mailOptions == [], "a 7-bit message asks for neither 8BITMIME nor SMTPUTF8")
    }

    @Test func plainToLoopbackWithAuthLogin() throws {
        let server = try TestSMTPServer(["--auth", "kirim:rahasia", "--auth-mechanisms", "LOGIN"])
        defer { server.stop() }
        let client = try SMTPClient.connect(configuration("smtp+plain://kirim:rahasia@localhost:\(server.port)"))
        try client.send(message())
        client.close()
        let delivery = try server.delivery(1)
        #expect(delivery.login == "kirim" && delivery.authMechanism == "LOGIN")
    }

    @Test func wrongPassword() throws {
        let server = try TestSMTPServer(["--auth", "kirim:rahasia"])
        defer { server.stop() }
        let error = expectError(.authenticationFailed) {
            _ = try SMTPClient.connect(configuration("smtp+plain://kirim:salah-sandi@127.0.0.1:\(server.port)"))
        }
        #expect(error?.reply?.hasPrefix("535") == true)
        #expect(error?.isPermanent == false)
        #expect(error?.description.contains("salah-sandi") == false)
        #expect(server.deliveryCount == 0)
    }

    @Test func startTLSDelivers() throws {
        let certificates = try TestCertificates.shared()
        let server = try TestSMTPServer(["--starttls", certificates.server.certificate, certificates.server.key, "--auth", "kirim:rahasia"])
        defer { server.stop() }
        let client = try SMTPClient.connect(configuration("smtp://kirim:rahasia@localhost:\(server.port)", caFile: certificates.caFile))
        let subject = "Pengaturan ulang kata sandi — Aplikasi Sehat ✓"
        var sent = message(subject: subject)
        sent.html = "<p>Halo Budi — <a href=\"https://sehat.id/r?t=a=b\">atur ulang</a></p>\n.\n"
        try client.send(sent)
        client.close()

        let delivery = try server.delivery(1)
        #expect(delivery.tls && delivery.login == "kirim" && delivery.authMechanism == "PLAIN")
        let summary = delivery.summary
        #expect(summary.allDefects == [])
        #expect(summary.subject == subject)
        #expect(summary.from == .init(name: "Aplikasi Sehat", address: "no-reply@sehat.id"))
        #expect(summary.to == .init(name: "Budi", address: "budi@example.org"))
        #expect(summary.messageId == "<\(sent.messageID)>")
        #expect(summary.date == "2026-02-03T09:05:07+00:00")
        #expect(summary.contentType == "multipart/alternative")
        #expect(summary.parts.map(\.type) == ["text/plain", "text/html"])
        #expect(summary.parts.map(\.encoding) == ["7bit", "quoted-printable"])
        #expect(summary.parts[0].content == "Halo Budi,\r\n.\r\n.x\r\nselesai.\r\n")
        #expect(summary.parts[1].content == sent.html!.replacingOccurrences(of: "\n", with: "\r\n"))
        // The lines "." and ".x" went out stuffed and arrived as they were.
        let received = String(decoding: try server.message(1), as: UTF8.self)
        #expect(received.contains("\r\nHalo Budi,\r\n.\r\n.x\r\nselesai.\r\n"))
        #expect(!received.contains("\r\n..x"))
        #expect(received.utf8.count == sent.rendered().count)
    }

    @Test func implicitTLS() throws {
        let certificates = try TestCertificates.shared()
        let server = try TestSMTPServer(["--implicit-tls", certificates.server.certificate, certificates.server.key, "--auth", "kirim:rahasia"])
        defer { server.stop() }
        let client = try SMTPClient.connect(configuration("smtps://kirim:rahasia@127.0.0.1:\(server.port)", caFile: certificates.caFile))
        try client.send(message())
        client.close()
        let delivery = try server.delivery(1)
        #expect(delivery.tls && delivery.login == "kirim")
    }

    @Test func untrustedCertificate() throws {
        let certificates = try TestCertificates.shared()
        let server = try TestSMTPServer(["--starttls", certificates.server.certificate, certificates.server.key])
        defer { server.stop() }
        let error = expectError(.certificateRejected) { _ = try SMTPClient.connect(configuration("smtp://localhost:\(server.port)")) }
        #expect(error?.detail.contains("unable to get local issuer certificate") == true)
        let implicit = try TestSMTPServer(["--implicit-tls", certificates.server.certificate, certificates.server.key])
        defer { implicit.stop() }
        expectError(.certificateRejected) { _ = try SMTPClient.connect(configuration("smtps://localhost:\(implicit.port)")) }
    }

    @Test func certificateForAnotherName() throws {
        let certificates = try TestCertificates.shared()
        let server = try TestSMTPServer(["--starttls", certificates.otherName.certificate, certificates.otherName.key])
        defer { server.stop() }
        let error = expectError(.certificateRejected) {
            _ = try SMTPClient.connect(configuration("smtp://localhost:\(server.port)", caFile: certificates.caFile))
        }
        #expect(error?.detail.contains("mismatch") == true)
    }

    @Test func certificateForAnotherAddress() throws {
        let certificates = try TestCertificates.shared()
        // The certificate names 127.0.0.1; Linux answers on all of 127.0.0.0/8.
        let server = try TestSMTPServer(["--implicit-tls", certificates.server.certificate, certificates.server.key], host: "127.0.0.2")
        defer { server.stop() }
        let error = expectError(.certificateRejected) {
            _ = try SMTPClient.connect(configuration("smtps://127.0.0.2:\(server.port)", caFile: certificates.caFile))
        }
        #expect(error?.detail.contains("mismatch") == true)
    }

    @Test func startTLSIsRequired() throws {
        let server = try TestSMTPServer()
        defer { server.stop() }
        expectError(.startTLSUnavailable) { _ = try SMTPClient.connect(configuration("smtp://localhost:\(server.port)")) }
        #expect(server.deliveryCount == 0)
    }

    @Test func permanentRejectionThenTheNextMessage() throws {
        let server = try TestSMTPServer(["--reject", "nobody"])
        defer { server.stop() }
        let client = try SMTPClient.connect(configuration("smtp+plain://127.0.0.1:\(server.port)"))
        defer { client.close() }
        let error = expectError(.rejected) { try client.send(message(to: "nobody@example.org")) }
        #expect(error?.isPermanent == true)
        #expect(error?.reply == "550 5.1.1 mailbox unavailable")
        try client.reset()
        try client.send(message(to: "budi@example.org"))
        #expect(try server.delivery(1).rcptTos == ["budi@example.org"])
    }

    @Test func temporaryFailure() throws {
        let server = try TestSMTPServer(["--tempfail", "later"])
        defer { server.stop() }
        let client = try SMTPClient.connect(configuration("smtp+plain://127.0.0.1:\(server.port)"))
        defer { client.close() }
        let error = expectError(.rejected) { try client.send(message(to: "later@example.org")) }
        #expect(error?.isPermanent == false)
        #expect(error?.reply == "451 4.3.0 try again later")
    }

    @Test func batchOnOneConnection() throws {
        let certificates = try TestCertificates.shared()
        let server = try TestSMTPServer(["--starttls", certificates.server.certificate, certificates.server.key])
        defer { server.stop() }
        let client = try SMTPClient.connect(configuration("smtp://127.0.0.1:\(server.port)", caFile: certificates.caFile))
        for number in 1...3 {
            #expect(try client.send(message(to: "user\(number)@example.org", subject: "Message \(number)")) == "250 2.0.0 OK queued as \(number)")
        }
        client.close()
        for number in 1...3 {
            let delivery = try server.delivery(number)
            #expect(delivery.rcptTos == ["user\(number)@example.org"] && delivery.summary.subject == "Message \(number)")
        }
        expectError(.connectionClosed) { try client.send(message()) }
    }

    @Test func internationalAddressNeedsSMTPUTF8() throws {
        let international = message(to: "pengguna@contoh.例え")
        let server = try TestSMTPServer(["--smtputf8"])
        defer { server.stop() }
        let client = try SMTPClient.connect(configuration("smtp+plain://127.0.0.1:\(server.port)"))
        try client.send(international)
        client.close()
        let delivery = try server.delivery(1)
        #expect(delivery.rcptTos == ["pengguna@contoh.例え"])
        #expect(Set(delivery.mailOptions) == ["SMTPUTF8", "BODY=8BITMIME"])
        #expect(delivery.summary.to?.address == "pengguna@contoh.例え")

        let plain = try TestSMTPServer()
        defer { plain.stop() }
        let other = try SMTPClient.connect(configuration("smtp+plain://127.0.0.1:\(plain.port)"))
        defer { other.close() }
        let error = expectError(.rejected) { try other.send(international) }
        #expect(error?.isPermanent == true)
    }

    @Test func invalidAddressNeverReachesTheServer() throws {
        let server = try TestSMTPServer()
        defer { server.stop() }
        let client = try SMTPClient.connect(configuration("smtp+plain://127.0.0.1:\(server.port)"))
        defer { client.close() }
        let error = expectError(.rejected) { try client.send(message(to: "a@b.example>\r\nRCPT TO:<c@d.example")) }
        #expect(error?.isPermanent == true)
        try client.send(message())
        #expect(try server.delivery(1).rcptTos == ["budi@example.org"])
    }

    /// The client gives up on its own, after its timeout and while the server is still silent: a
    /// watchdog hangs up after 30 s, and a client that waited for that fails with a reset.
    @Test func serverThatNeverGreets() throws {
        let listener = try SilentListener(backlog: 4)
        defer { listener.close() }
        let port = listener.port
        let start = ContinuousClock.now
        let (error, onItsOwn) = listener.whileSilent {
            expectError(.timeout) { _ = try SMTPClient.connect(configuration("smtp+plain://127.0.0.1:\(port)", timeout: .milliseconds(400))) }
        }
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(400), "gave up after \(elapsed), before its timeout")
        #expect(onItsOwn, "the client was still waiting when the watchdog hung up, after \(elapsed)")
        #expect(error?.isPermanent == false)
    }

    @Test func nothingListening() throws {
        let closed = try LoopbackSocket()  // bound, never listening: refused
        defer { closed.close() }
        expectError(.connectFailed) { _ = try SMTPClient.connect(configuration("smtp+plain://127.0.0.1:\(closed.port)")) }
    }

    @Test func credentialsNeverGoUnencryptedToAnotherHost() throws {
        var configuration = try configuration("smtp+plain://127.0.0.1:1")
        configuration.host = "192.0.2.1"
        configuration.username = "kirim"
        configuration.password = "rahasia"
        // Refused before any connection is tried (192.0.2.1 is TEST-NET-1 and would time out).
        let error = expectError(.authenticationFailed) { _ = try SMTPClient.connect(configuration) }
        #expect(error?.description.contains("rahasia") == false)
    }
}
