import TestSupport
import Testing

@testable import Mail

@Suite(.testThreads) struct SMTPConfigurationTests {
    private func expectInvalid(_ url: String, mentioning word: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = #expect(throws: SMTPError.self, sourceLocation: sourceLocation) { try SMTPConfiguration(url: url) }
        #expect(error?.code == .invalidURL, sourceLocation: sourceLocation)
        #expect(error?.description.contains(word) == true, "\(error?.description ?? "")", sourceLocation: sourceLocation)
        #expect(error?.description.contains("secret") == false, sourceLocation: sourceLocation)
    }

    @Test func schemesAndDefaultPorts() throws {
        let implicit = try SMTPConfiguration(url: "smtps://smtp.example.org")
        #expect(implicit.security == .implicitTLS && implicit.port == 465 && implicit.host == "smtp.example.org")
        let start = try SMTPConfiguration(url: "smtp://smtp.example.org/")
        #expect(start.security == .startTLS && start.port == 587)
        let plain = try SMTPConfiguration(url: "SMTP+Plain://localhost")
        #expect(plain.security == .none && plain.port == 25)
        #expect(implicit.username == nil && implicit.password == nil && implicit.caFile == nil)
        #expect(implicit.timeout == .seconds(30) && implicit.heloName == "localhost")
    }

    @Test func explicitPortAndAddresses() throws {
        #expect(try SMTPConfiguration(url: "smtp://relay:2525").port == 2525)
        let v4 = try SMTPConfiguration(url: "smtps://192.0.2.7:4650")
        #expect(v4.host == "192.0.2.7" && v4.port == 4650)
        let v6 = try SMTPConfiguration(url: "smtps://[2001:db8::25]:465")
        #expect(v6.host == "2001:db8::25" && v6.description == "smtps://[2001:db8::25]:465")
        #expect(try SMTPConfiguration(url: "smtps://[::1]").port == 465)
    }

    @Test func percentDecodedCredentials() throws {
        let configuration = try SMTPConfiguration(url: "smtps://user%40example.org:p%40ss%3Aw%C3%B6rd%2F@smtp.example.org:465")
        #expect(configuration.username == "user@example.org")
        #expect(configuration.password == "p@ss:wörd/")
        let noPassword = try SMTPConfiguration(url: "smtps://apikey@smtp.example.org")
        #expect(noPassword.username == "apikey" && noPassword.password == nil)
        #expect(try SMTPConfiguration(url: "smtps://u:@h").password == "")
    }

    @Test func descriptionHidesThePassword() throws {
        let configuration = try SMTPConfiguration(url: "smtp://user%40example.org:secret@smtp.example.org")
        #expect(configuration.description == "smtp://user%40example.org@smtp.example.org:587")
        #expect(try SMTPConfiguration(url: "smtp+plain://127.0.0.1").description == "smtp+plain://127.0.0.1:25")
    }

    @Test func refusesBadURLs() {
        expectInvalid("smtp.example.org", mentioning: "scheme")
        expectInvalid("http://smtp.example.org", mentioning: "'http'")
        expectInvalid("submission://smtp.example.org", mentioning: "'submission'")
        expectInvalid("smtps://", mentioning: "host")
        expectInvalid("smtps://u:secret@", mentioning: "host")
        expectInvalid("smtps://smtp.example.org:0", mentioning: "port")
        expectInvalid("smtps://smtp.example.org:65536", mentioning: "port")
        expectInvalid("smtps://smtp.example.org:x25", mentioning: "port")
        expectInvalid("smtps://smtp.example.org:", mentioning: "port")
        expectInvalid("smtps://smtp.example.org:+25", mentioning: "port")
        expectInvalid("smtps://user:secret", mentioning: "port")
        expectInvalid("smtps://smtp.example.org/path", mentioning: "path")
        expectInvalid("smtps://smtp.example.org?ca=x", mentioning: "query")
        expectInvalid("smtps://2001:db8::1", mentioning: "brackets")
        expectInvalid("smtps://[2001:db8::1", mentioning: "']'")
        expectInvalid("smtps://[not-v6]:25", mentioning: "IPv6")
        expectInvalid("smtps://:secret@smtp.example.org", mentioning: "user name")
        expectInvalid("smtps://u%zz:secret@smtp.example.org", mentioning: "user name")
        expectInvalid("smtps://u:secret%@smtp.example.org", mentioning: "password")
        expectInvalid("smtps://smtp example.org", mentioning: "host")
    }

    @Test func plainCredentialsOnlyToLoopback() throws {
        expectInvalid("smtp+plain://u:secret@smtp.example.org", mentioning: "unencrypted")
        #expect(try SMTPConfiguration(url: "smtp+plain://u:secret@localhost").username == "u")
        #expect(try SMTPConfiguration(url: "smtp+plain://u:secret@127.0.0.1").username == "u")
    }

    @Test func loopback() throws {
        for host in ["localhost", "LocalHost", "127.0.0.1", "127.1.2.3", "[::1]"] {
            #expect(try SMTPConfiguration(url: "smtps://\(host)").isLoopback, "\(host)")
        }
        for host in ["128.0.0.1", "10.0.0.1", "[::2]", "[::ffff:8.8.8.8]", "localhost.example.org", "mail.example.org"] {
            #expect(try !SMTPConfiguration(url: "smtps://\(host)").isLoopback, "\(host)")
        }
    }

    @Test func errorCodesAreStable() {
        #expect(
            SMTPError.Code.allCases.map(\.rawValue) == [
                "invalid_url", "connect_failed", "timeout", "tls_failed", "certificate_rejected", "starttls_unavailable", "authentication_failed",
                "rejected", "protocol_error", "connection_closed",
            ])
    }
}
