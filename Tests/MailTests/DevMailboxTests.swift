import TestSupport
import Files
import Foundation
import Glibc
import Mail
import Testing

@Suite(.testThreads) struct DevMailboxTests {
    @Test func writesAReadableMessage() throws {
        let root = try FileSystem.createTemporaryDirectory(prefix: "mail-devbox")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let mailbox = DevMailbox(directory: root + "/outbox/dev")
        let message = MailMessage(
            from: MailAddress("no-reply@sehat.id", displayName: "Aplikasi Sehat"), to: MailAddress("budi@example.org"),
            subject: "Pengaturan ulang kata sandi — Aplikasi Sehat ✓", text: "Halo Budi,\nbuka tautan ini.\n",
            html: "<p>Halo Budi</p>\n", date: Date(timeIntervalSince1970: 1_770_109_507.25), messageID: "a1b2/c3@sehat.id")
        let path = try mailbox.deliver(message)
        #expect(path == root + "/outbox/dev/1770109507250-a1b2_c3@sehat.id.eml")
        #expect(try FileSystem.entries(of: root + "/outbox/dev") == ["1770109507250-a1b2_c3@sehat.id.eml"])

        var status = stat()
        #expect(stat(root + "/outbox/dev", &status) == 0 && status.st_mode & 0o777 == 0o700)
        #expect(stat(path, &status) == 0 && status.st_mode & 0o777 == 0o600)

        let summary = try MessageSummary.of(try FileReader.bytes(path))
        #expect(summary.allDefects == [])
        #expect(summary.subject == message.subject)
        #expect(summary.parts.map(\.content) == ["Halo Budi,\r\nbuka tautan ini.\r\n", "<p>Halo Budi</p>\r\n"])

        // Delivering the same message again replaces the file rather than failing.
        #expect(try mailbox.deliver(message) == path)
        #expect(try FileSystem.entries(of: root + "/outbox/dev").count == 1)
    }
}
