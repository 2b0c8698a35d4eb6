import Files
import TestSupport
import Testing

@testable import Outbox

/// The built-in mail templates, their overrides from a directory, and how values fill them.
@Suite(.testThreads)
struct MailTemplatesTests {
    let values = [
        "appName": "Aplikasi Sehat", "name": "Ayu <b>", "email": "ayu@example.com", "newEmail": "new@example.com",
        "link": "https://a.example/reset-password#token=abc&x=1",
    ]

    @Test func everyBuiltInMailUsesOnlyKnownPlaceholdersAndNamesItsLink() {
        for kind in MailKind.allCases {
            let template = MailTemplates.builtIn.templates[kind]!
            for part in [template.subject, template.text, template.html] {
                #expect(Set(MailTemplates.placeholderNames(in: part)).isSubset(of: MailTemplates.placeholders), "\(kind)")
            }
            let rendered = MailTemplates.builtIn.render(kind, values: values)
            #expect(rendered.subject.contains("Aplikasi Sehat"))
            #expect(!rendered.text.contains("{{") && !rendered.html.contains("{{"))
            if kind.linkPath != nil {
                #expect(rendered.text.contains(values["link"]!))
                #expect(rendered.html.contains("https://a.example/reset-password#token=abc&amp;x=1"))
            }
        }
    }

    @Test func valuesAreEscapedInHTMLOnly() {
        let rendered = MailTemplates.builtIn.render(.passwordChanged, values: values)
        #expect(rendered.text.contains("Hi Ayu <b>,"))
        #expect(rendered.html.contains("Hi Ayu &lt;b&gt;,"))
        #expect(!rendered.html.contains("Ayu <b>"))
    }

    @Test func aDirectoryReplacesWhatItHas() throws {
        let directory = try makeTemporaryDirectory("exo-templates")
        try write(directory + "/password_reset.txt", "Subject: Reset {{appName}}\r\n\r\nGo to {{link}} now.\n")
        try write(directory + "/email_changed.html", "<p>{{newEmail}}</p>")
        let templates = try MailTemplates.load(overridesIn: directory)
        let reset = templates.render(.passwordReset, values: values)
        #expect(reset.subject == "Reset Aplikasi Sehat")
        #expect(reset.text == "Go to \(values["link"]!) now.\n")
        // No HTML file: the built-in one.
        #expect(reset.html == MailTemplates.builtIn.render(.passwordReset, values: values).html)
        #expect(templates.render(.emailChanged, values: values).html == "<p>new@example.com</p>")
        #expect(templates.templates[.verifyEmail] == MailTemplates.builtIn.templates[.verifyEmail])
    }

    @Test func mistakesStopTheLoadWithALine() throws {
        let directory = try makeTemporaryDirectory("exo-templates")
        try write(directory + "/verify_email.txt", "Subject: Hi\n\n{{link}} {{token}}\n")
        #expect(throws: MailTemplateError.self) { try MailTemplates.load(overridesIn: directory) }
        let noSubject = try makeTemporaryDirectory("exo-templates")
        try write(noSubject + "/verify_email.txt", "Hello {{link}}\n")
        #expect(throws: MailTemplateError.self) { try MailTemplates.load(overridesIn: noSubject) }
        #expect(throws: MailTemplateError.self) { try MailTemplates.load(overridesIn: directory + "/missing") }
    }

    @Test func theHostOfThePublicURLNamesMessageIDs() {
        #expect(OutboxSender.host(of: "https://accounts.example.com/base") == "accounts.example.com")
        #expect(OutboxSender.host(of: "http://user@[::1]:8080") == "[::1]")
        #expect(OutboxSender.host(of: "http://localhost:8080") == "localhost")
        #expect(OutboxSender.host(of: "nonsense") == nil)
    }

    private func write(_ path: String, _ text: String) throws {
        try Array(text.utf8).withUnsafeBytes { try FileSystem.writeNewFile(path, $0, sync: false) }
    }
}
