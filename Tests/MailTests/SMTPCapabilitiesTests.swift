import TestSupport
import Testing

@testable import Mail

@Suite(.testThreads) struct SMTPCapabilitiesTests {
    @Test func readsKeywordsAndMechanisms() {
        let reply = SMTPReply(code: 250, lines: ["mail.example.org greets you", "SIZE 1000", "8bitmime", "STARTTLS", "AUTH login Plain", "SMTPUTF8"])
        let capabilities = SMTPCapabilities(ehloReply: reply)
        #expect(capabilities.supports("STARTTLS"))
        #expect(capabilities.supports("8BITMIME"))
        #expect(capabilities.supports("SMTPUTF8"))
        #expect(!capabilities.supports("PIPELINING"))
        #expect(capabilities.authenticationMechanisms == ["LOGIN", "PLAIN"])
    }

    @Test func theGreetingLineIsNoExtension() {
        let capabilities = SMTPCapabilities(ehloReply: SMTPReply(code: 250, lines: ["STARTTLS"]))
        #expect(!capabilities.supports("STARTTLS"))
    }

    @Test func readsTheOldAuthForm() {
        let capabilities = SMTPCapabilities(ehloReply: SMTPReply(code: 250, lines: ["host", "AUTH=LOGIN", "AUTH PLAIN"]))
        #expect(Set(capabilities.authenticationMechanisms) == ["LOGIN", "PLAIN"])
    }
}
