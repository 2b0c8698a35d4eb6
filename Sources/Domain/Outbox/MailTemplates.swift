import Files

/// The subject, text and HTML of each mail, with `{{name}}` placeholders: built in, and
/// overridable per mail from a directory (`--mail-templates`).
///
/// An override directory holds, for a mail kind such as `password_reset`, `password_reset.txt`
/// (a first line `Subject: …`, an empty line, then the text) and `password_reset.html` (the HTML
/// body); either may be missing, and the built-in one is used. Placeholders are checked when the
/// templates load, so a typo stops the server at start, not a mail at 3 a.m.
public struct MailTemplates: Sendable {
    /// One mail's template.
    public struct Template: Sendable, Equatable {
        public var subject: String
        public var text: String
        public var html: String

        public init(subject: String, text: String, html: String) {
            self.subject = subject
            self.text = text
            self.html = html
        }
    }

    /// A rendered mail: ready for a `MailMessage`.
    public struct Rendered: Sendable, Equatable {
        public var subject: String
        public var text: String
        public var html: String
    }

    /// The placeholders a template may use (`method`: the way to sign in a notice is about).
    public static let placeholders: Set<String> = ["appName", "name", "email", "newEmail", "link", "method", "change", "code"]

    public private(set) var templates: [MailKind: Template]

    /// The built-in templates.
    public static let builtIn = MailTemplates(templates: BuiltInTemplates.all)

    private init(templates: [MailKind: Template]) {
        self.templates = templates
    }

    /// The built-in templates with the files of `directory` in their place. Throws
    /// `MailTemplateError` for an unreadable file, a missing subject line or an unknown placeholder.
    public static func load(overridesIn directory: String) throws -> MailTemplates {
        var loaded = MailTemplates.builtIn
        guard FileSystem.modificationTime(directory) != nil else { throw MailTemplateError("mail templates: \(directory) does not exist") }
        for kind in MailKind.allCases {
            var template = loaded.templates[kind]!
            let textPath = directory + "/" + kind.rawValue + ".txt"
            if FileSystem.modificationTime(textPath) != nil {
                let content = try readText(textPath)
                guard content.hasPrefix("Subject:"), let end = content.firstRange(of: "\n\n") else {
                    throw MailTemplateError("\(textPath): the first line must be `Subject: …`, then an empty line, then the text")
                }
                let subject = content[content.index(content.startIndex, offsetBy: 8)..<end.lowerBound]
                template.subject = String(subject.drop(while: { $0 == " " || $0 == "\t" }))
                template.text = String(content[end.upperBound...])
            }
            let htmlPath = directory + "/" + kind.rawValue + ".html"
            if FileSystem.modificationTime(htmlPath) != nil { template.html = try readText(htmlPath) }
            for (part, text) in [("subject", template.subject), ("text", template.text), ("html", template.html)] {
                for name in placeholderNames(in: text) where !placeholders.contains(name) {
                    throw MailTemplateError(
                        "\(kind.rawValue) \(part): unknown placeholder {{\(name)}}; known: \(placeholders.sorted().joined(separator: ", "))")
                }
            }
            loaded.templates[kind] = template
        }
        return loaded
    }

    /// Fills a mail's template: values as they are in the subject and text, HTML-escaped in the HTML.
    public func render(_ kind: MailKind, values: [String: String]) -> Rendered {
        let template = templates[kind]!
        return Rendered(
            subject: Self.fill(template.subject, values, escape: { $0 }).replacing("\n", with: " "),
            text: Self.fill(template.text, values, escape: { $0 }),
            html: Self.fill(template.html, values, escape: Self.escapeHTML))
    }

    static func fill(_ template: String, _ values: [String: String], escape: (String) -> String) -> String {
        var result = ""
        var rest = Substring(template)
        while let open = rest.firstRange(of: "{{"), let close = rest[open.upperBound...].firstRange(of: "}}") {
            result += rest[..<open.lowerBound]
            let name = String(rest[open.upperBound..<close.lowerBound])
            result += escape(values[name] ?? "")
            rest = rest[close.upperBound...]
        }
        return result + rest
    }

    static func placeholderNames(in template: String) -> [String] {
        var names: [String] = []
        var rest = Substring(template)
        while let open = rest.firstRange(of: "{{"), let close = rest[open.upperBound...].firstRange(of: "}}") {
            names.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        return names
    }

    static func escapeHTML(_ text: String) -> String {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"": escaped += "&quot;"
            case "'": escaped += "&#39;"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    private static func readText(_ path: String) throws -> String {
        do {
            return try FileReader.text(path, limit: 1 << 20).replacing("\r\n", with: "\n")
        } catch {
            throw MailTemplateError("mail templates: \(path): \(error)")
        }
    }
}

/// A template directory that cannot be used, said in one line.
public struct MailTemplateError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
