import TestSupport
import Foundation
import Testing

@testable import Mail

@Suite(.testThreads) struct MailMessageTests {
    static let date = Date(timeIntervalSince1970: 1_770_109_507)  // 2026-02-03T09:05:07Z

    private func text(_ message: MailMessage) -> String { String(decoding: message.rendered(), as: UTF8.self) }

    @Test func dates() {
        #expect(RFC5322Date.string(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 +0000")
        #expect(RFC5322Date.string(Self.date) == "Tue, 03 Feb 2026 09:05:07 +0000")
        #expect(RFC5322Date.string(Date(timeIntervalSince1970: 951_782_400.75)) == "Tue, 29 Feb 2000 00:00:00 +0000")
        #expect(RFC5322Date.string(Date(timeIntervalSince1970: -1)) == "Wed, 31 Dec 1969 23:59:59 +0000")
    }

    @Test func plainTextOnly() throws {
        let message = MailMessage(
            from: MailAddress("no-reply@sehat.id", displayName: "Aplikasi Sehat"), to: MailAddress("ann@example.org"),
            subject: "Reset your password", text: "Hello Ann,\n\nOpen the link.\n", date: Self.date, messageID: "1234@sehat.id")
        #expect(
            text(message) == """
                Date: Tue, 03 Feb 2026 09:05:07 +0000\r
                Message-ID: <1234@sehat.id>\r
                From: Aplikasi Sehat <no-reply@sehat.id>\r
                To: ann@example.org\r
                Subject: Reset your password\r
                MIME-Version: 1.0\r
                Content-Type: text/plain; charset=utf-8\r
                Content-Transfer-Encoding: 7bit\r
                \r
                Hello Ann,\r
                \r
                Open the link.\r

                """)
        let summary = try MessageSummary.of(message.rendered())
        #expect(summary.allDefects == [])
        #expect(summary.parts.map(\.content) == ["Hello Ann,\r\n\r\nOpen the link.\r\n"])
        var unterminated = message
        unterminated.text = "No line end"
        #expect(text(unterminated).hasSuffix("\r\n\r\nNo line end\r\n"))
    }

    @Test func alternativeParts() throws {
        let message = MailMessage(
            from: MailAddress("no-reply@sehat.id", displayName: "Aplikasi Sehat ✓"), to: MailAddress("budi@example.org", displayName: "Budi Śantoso"),
            subject: "Pengaturan ulang kata sandi — Aplikasi Sehat ✓", text: "Halo Budi,\n\nBuka tautan: https://sehat.id/r?t=abc\n.\n",
            html: "<p>Halo Budi — <a href=\"https://sehat.id/r?t=abc\">atur ulang</a></p>\n" + String(repeating: "<span>x</span>", count: 20),
            date: Self.date, messageID: "<5678@sehat.id>")
        let rendered = text(message)
        let boundary = try #require(rendered.firstMatch(of: /boundary="([^"]+)"/)?.1)
        #expect(boundary.hasPrefix("=_") && boundary.count == 34)
        #expect(rendered.contains("Message-ID: <5678@sehat.id>\r\n"))
        #expect(
            rendered.contains(
                "\r\n\r\n--\(boundary)\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n"))
        #expect(
            rendered.contains("\r\n--\(boundary)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"))
        #expect(rendered.hasSuffix("\r\n--\(boundary)--\r\n"))
        #expect(text(message) != rendered, "each rendering draws a new boundary")

        let summary = try MessageSummary.of(message.rendered())
        #expect(summary.allDefects == [])
        #expect(summary.subject == message.subject)
        #expect(summary.from == .init(name: "Aplikasi Sehat ✓", address: "no-reply@sehat.id"))
        #expect(summary.to == .init(name: "Budi Śantoso", address: "budi@example.org"))
        #expect(summary.date == "2026-02-03T09:05:07+00:00")
        #expect(summary.messageId == "<5678@sehat.id>")
        #expect(summary.contentType == "multipart/alternative")
        #expect(summary.parts.map(\.type) == ["text/plain", "text/html"])
        #expect(summary.parts.map(\.charset) == ["utf-8", "utf-8"])
        #expect(summary.parts[0].content == message.text.replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(summary.parts[1].content == message.html!.replacingOccurrences(of: "\n", with: "\r\n"))
        #expect(!summary.eightBit)
        #expect(summary.bareLineEnds == 0)
        #expect(summary.longestLine <= 78)
    }

    @Test func everyLineWithinLimits() throws {
        var generator = SeededGenerator(state: 5322)
        let alphabet = Array("ab =.\u{e9}\u{2014}\u{2713}\u{1F600}\n\r\n\t<>\"")
        func random(_ count: Int) -> String { String((0..<count).map { _ in alphabet.randomElement(using: &generator)! }) }
        for _ in 0..<50 {
            let message = MailMessage(
                from: MailAddress("a@b.example", displayName: random(Int.random(in: 0..<90, using: &generator))), to: MailAddress("c@d.example"),
                subject: random(Int.random(in: 0..<200, using: &generator)), text: random(Int.random(in: 0..<2000, using: &generator)),
                html: Bool.random(using: &generator) ? random(500) : nil, date: Self.date, messageID: "x@y")
            let bytes = message.rendered()
            #expect(bytes.allSatisfy { $0 < 0x80 })
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\r\n", omittingEmptySubsequences: false)
            #expect(lines.allSatisfy { $0.utf8.count <= 78 })
            #expect(!lines.contains { $0.contains("\r") || $0.contains("\n") })
        }
    }

    @Test func pythonReadsRandomMessagesBack() throws {
        var generator = SeededGenerator(state: 2046)
        let alphabet = Array("ab =.\u{e9}\u{2014}\u{2713}\u{1F600}\n\t<>\"")
        func random(_ count: Int) -> String { String((0..<count).map { _ in alphabet.randomElement(using: &generator)! }) }
        for _ in 0..<5 {
            let name = "N" + random(40)
            let message = MailMessage(
                from: MailAddress("a@b.example", displayName: name), to: MailAddress("c@d.example"), subject: "S" + random(120),
                text: random(1500), html: random(700), date: Self.date, messageID: "x@y")
            let summary = try MessageSummary.of(message.rendered())
            #expect(summary.allDefects == [])
            #expect(summary.subject == HeaderField.singleLine(message.subject))
            // Python also folds runs of whitespace in a display name (a phrase) into one space.
            #expect(summary.from?.name.split(separator: " ") == HeaderField.singleLine(name).split(separator: " "))
            #expect(summary.parts[0].content == MIMETextPart.lines(of: message.text).joined(separator: "\r\n"))
            #expect(summary.parts[1].content == MIMETextPart.lines(of: message.html!).joined(separator: "\r\n"))
        }
    }
}
