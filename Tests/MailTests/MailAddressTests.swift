import TestSupport
import Testing

@testable import Mail

@Suite(.testThreads) struct MailAddressTests {
    @Test func parsesTheForms() {
        #expect(MailAddress(parsing: "ann@example.org") == MailAddress("ann@example.org"))
        #expect(MailAddress(parsing: "  <ann@example.org> ") == MailAddress("ann@example.org"))
        #expect(MailAddress(parsing: "Aplikasi Sehat <no-reply@sehat.id>") == MailAddress("no-reply@sehat.id", displayName: "Aplikasi Sehat"))
        #expect(MailAddress(parsing: "\"Sehat, Inc.\" <a@b.example>") == MailAddress("a@b.example", displayName: "Sehat, Inc."))
        #expect(MailAddress(parsing: "\"Say \\\"hi\\\"\" <a@b.example>") == MailAddress("a@b.example", displayName: "Say \"hi\""))
        #expect(MailAddress(parsing: "Tim Dukungan ✓ <dukungan@sehat.id>") == MailAddress("dukungan@sehat.id", displayName: "Tim Dukungan ✓"))
        #expect(MailAddress(parsing: "\"\" <a@b.example>") == MailAddress("a@b.example"))
    }

    @Test func refusesWhatIsNotAnAddress() {
        for text in [
            "", "ann", "@example.org", "ann@", "ann@@example.org", "a b@example.org", "ann@exa mple.org", ".ann@example.org", "an..n@example.org",
            "ann@example..org", "ann@-example.org", "ann@example.org>", "Ann <ann@example.org", "Ann \"x <ann@example.org>",
            "Ann\r\nBcc: x <ann@example.org>", "ann@example.org\r\nRCPT TO:<x@y.z>", "a<b@example.org", "\"quoted\"@example.org",
            String(repeating: "a", count: 65) + "@example.org",
        ] {
            #expect(MailAddress(parsing: text) == nil, "\(text.debugDescription)")
        }
    }

    @Test func acceptsInternationalAndLiteralAddresses() {
        #expect(MailAddress.isValid(address: "pengguna@contoh.例え"))
        #expect(MailAddress.isValid(address: "josé@example.org"))
        #expect(MailAddress.isValid(address: "first.last+tag@sub.example.org"))
        #expect(MailAddress.isValid(address: "root@[127.0.0.1]"))
        #expect(MailAddress.isValid(address: "root@[IPv6:2001:db8::1]"))
        #expect(!MailAddress.isValid(address: "root@[127.0.0.1"))
    }
}
