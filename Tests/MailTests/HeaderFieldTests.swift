import TestSupport
import Testing

@testable import Mail

@Suite(.testThreads) struct HeaderFieldTests {
    private func lines(_ field: String) -> [Substring] {
        #expect(field.hasSuffix("\r\n"))
        // "\r\n" is a single Character.
        return field.dropLast().split(separator: "\r\n", omittingEmptySubsequences: false)
    }

    @Test func shortSubjectAsItIs() {
        #expect(HeaderField.unstructured("Subject", "Reset your password") == "Subject: Reset your password\r\n")
        #expect(HeaderField.unstructured("Subject", "") == "Subject:\r\n")
    }

    @Test func longSubjectFoldsAtSpaces() {
        let subject = (1...30).map { "word\($0)" }.joined(separator: " ") + "  double"
        let field = HeaderField.unstructured("Subject", subject)
        #expect(lines(field).count > 1)
        #expect(lines(field).allSatisfy { $0.utf8.count <= 78 })
        #expect(lines(field).dropFirst().allSatisfy { $0.hasPrefix(" ") })
        #expect(Decoders.unfolded(field) == "Subject: \(subject)\r\n")
    }

    @Test func lineEndsCannotStartAnotherField() {
        #expect(HeaderField.unstructured("Subject", "Hi\r\nBcc: victim@example.org") == "Subject: Hi  Bcc: victim@example.org\r\n")
        #expect(HeaderField.unstructured("Subject", "\n\nHi\n") == "Subject: Hi\r\n")
        let mailbox = HeaderField.mailbox("To", MailAddress("a@b.example\r\nBcc: c@d.example", displayName: "Ann\r\nBcc: e@f.example"))
        #expect(lines(mailbox).count == 1)
    }

    @Test func nonASCIISubjectAsEncodedWords() {
        let subject = "Pengaturan ulang kata sandi — Aplikasi Sehat ✓"
        let field = HeaderField.unstructured("Subject", subject)
        let folded = lines(field)
        #expect(folded.allSatisfy { $0.utf8.count <= 78 })
        #expect(folded.allSatisfy { $0.utf8.allSatisfy { $0 < 0x80 } })
        #expect(folded[0].hasPrefix("Subject: =?UTF-8?"))
        let words = Decoders.unfolded(field).dropFirst("Subject: ".count).dropLast().split(separator: " ").map(String.init)
        #expect(Decoders.encodedWords(words) == subject)
    }

    @Test func wordTooLongToFoldIsEncoded() {
        let subject = "Open https://example.org/" + String(repeating: "x", count: 120)
        let field = HeaderField.unstructured("Subject", subject)
        #expect(lines(field).allSatisfy { $0.utf8.count <= 78 })
        let words = Decoders.unfolded(field).dropFirst("Subject: ".count).dropLast().split(separator: " ").map(String.init)
        #expect(Decoders.encodedWords(words) == subject)
    }

    @Test func mailboxes() {
        #expect(HeaderField.mailbox("To", MailAddress("ann@example.org")) == "To: ann@example.org\r\n")
        #expect(
            HeaderField.mailbox("From", MailAddress("no-reply@sehat.id", displayName: "Aplikasi Sehat"))
                == "From: Aplikasi Sehat <no-reply@sehat.id>\r\n")
        #expect(HeaderField.mailbox("From", MailAddress("a@b.example", displayName: "Sehat, Inc.")) == "From: \"Sehat, Inc.\" <a@b.example>\r\n")
        #expect(
            HeaderField.mailbox("From", MailAddress("a@b.example", displayName: "Say \"hi\" \\o/"))
                == "From: \"Say \\\"hi\\\" \\\\o/\" <a@b.example>\r\n")
        #expect(HeaderField.mailbox("From", MailAddress("a@b.example", displayName: "  ")) == "From: a@b.example\r\n")
    }

    @Test func nonASCIIDisplayName() {
        let field = HeaderField.mailbox("From", MailAddress("no-reply@sehat.id", displayName: "Aplikasi Sehat — Tim Dukungan ✓"))
        #expect(field == "From: =?UTF-8?Q?Aplikasi_Sehat_=E2=80=94_Tim_Dukungan_=E2=9C=93?=\r\n <no-reply@sehat.id>\r\n")
        #expect(lines(field).allSatisfy { $0.utf8.count <= 78 })
    }
}
