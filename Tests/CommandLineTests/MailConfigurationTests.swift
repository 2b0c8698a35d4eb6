import API
import Mail
import Outbox
import TestSupport
import Testing

@testable import exosphere

/// The mail and recovery settings of `exosphere serve`.
@Suite(.testThreads) struct MailConfigurationTests {
    @Test func withoutARelayMailGoesToTheDevMailboxWithLinksToThisServer() throws {
        let configuration = try Configuration.parse(arguments: ["--port", "9000"], environment: [:])
        guard case .mailbox(let directory) = configuration.mail.transport else {
            Issue.record("expected the dev mailbox")
            return
        }
        #expect(directory == "./.exosphere/mail")
        #expect(configuration.resolvedPublicURL == "http://127.0.0.1:9000")
        #expect(configuration.resolvedMailFrom == MailAddress("no-reply@127.0.0.1", displayName: "Exosphere"))
    }

    @Test func aRelayItsCertificatesAndTheSender() throws {
        let configuration = try Configuration.parse(
            arguments: [
                "--smtp-ca-file", "/etc/ssl/relay.pem", "--public-url", "https://accounts.example.com/", "--app-name", "Aplikasi Sehat",
                "--mail-from", "Aplikasi Sehat <hello@example.com>", "--mail-retry-seconds", "5", "--mail-lease-seconds", "60",
            ],
            environment: ["EXOSPHERE_SMTP_URL": "smtps://mailer:p%40ss@smtp.example.com"])
        guard case .smtp(let relay) = configuration.mail.transport else {
            Issue.record("expected a relay")
            return
        }
        #expect(relay.security == .implicitTLS)
        #expect(relay.host == "smtp.example.com" && relay.port == 465)
        #expect(relay.username == "mailer" && relay.password == "p@ss")
        #expect(relay.caFile == "/etc/ssl/relay.pem")
        #expect(!relay.description.contains("p@ss") && !relay.description.contains("p%40ss"))
        #expect(configuration.resolvedPublicURL == "https://accounts.example.com")
        #expect(configuration.resolvedMailFrom == MailAddress("hello@example.com", displayName: "Aplikasi Sehat"))
        #expect(configuration.mail.appName == "Aplikasi Sehat")
        #expect(configuration.mail.retryBaseSeconds == 5)
        #expect(configuration.mail.leaseSeconds == 60)
    }

    @Test func theHelpNeverShowsTheRelaysPassword() throws {
        let configuration = try Configuration.parse(arguments: [], environment: ["EXOSPHERE_SMTP_URL": "smtp://u:secret-pw@relay.example.com"])
        for option in Configuration.options { #expect(!option.defaultValue(configuration).contains("secret-pw"), "\(option.flag)") }
    }

    @Test func appLinks() throws {
        let fingerprint = Array(repeating: "ab", count: 32).joined(separator: ":")
        let configuration = try Configuration.parse(
            arguments: ["--apple-app-ids", "ABCDE12345.com.example.app, FGHIJ67890.com.example.other", "--android-package", "com.example.app"],
            environment: ["EXOSPHERE_ANDROID_CERT_SHA256": fingerprint])
        #expect(configuration.appLinks.appleAppIDs == ["ABCDE12345.com.example.app", "FGHIJ67890.com.example.other"])
        #expect(configuration.appLinks.androidPackage == "com.example.app")
        #expect(configuration.appLinks.androidCertificateFingerprints == [fingerprint.uppercased()])
    }

    @Test func mistakesAreSaidInOneLineEach() {
        for (arguments, expected) in [
            (["--smtp-url", "http://relay.example.com"], "--smtp-url"),
            (["--smtp-ca-file", "/x.pem"], "--smtp-ca-file needs --smtp-url"),
            (["--public-url", "accounts.example.com"], "--public-url"),
            (["--public-url", "https://a.example.com/#x"], "--public-url"),
            (["--mail-from", "not an address"], "--mail-from"),
            (["--app-name", ""], "--app-name"),
            (["--mail-retry-seconds", "0"], "--mail-retry-seconds"),
            (["--mail-lease-seconds", "nan"], "--mail-lease-seconds"),
            (["--apple-app-ids", "noteamid"], "--apple-app-ids"),
            (["--android-cert-sha256", "AB:CD"], "--android-cert-sha256"),
        ] {
            do {
                _ = try Configuration.parse(arguments: arguments, environment: [:])
                Issue.record("accepted \(arguments)")
            } catch {
                #expect(error.description.contains(expected), "\(arguments): \(error.description)")
                #expect(!error.description.contains("\n"))
            }
        }
    }
}
