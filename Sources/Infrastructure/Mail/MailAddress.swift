/// An address with an optional display name (non-ASCII names are RFC 2047 encoded when rendered).
public struct MailAddress: Sendable, Equatable {
    /// The addr-spec, `local@domain`, without angle brackets.
    public var address: String
    public var displayName: String?

    public init(_ address: String, displayName: String? = nil) {
        self.address = address
        self.displayName = displayName
    }

    /// Parses "Name <a@b>", "\"Name\" <a@b>", "<a@b>" or "a@b" (for `--mail-from`); nil when
    /// the address is not a plain `local@domain` or the name holds a control character.
    public init?(parsing text: String) {
        let text = text.trimmingWhitespace()
        var name: String?
        var address = text
        if text.hasSuffix(">"), let open = text.lastIndex(of: "<") {
            address = String(text[text.index(after: open)..<text.index(before: text.endIndex)])
            let phrase = text[..<open].trimmingWhitespace()
            if phrase.count >= 2, phrase.hasPrefix("\""), phrase.hasSuffix("\"") {
                guard let unquoted = Self.unquoted(phrase.dropFirst().dropLast()) else { return nil }
                name = unquoted
            } else if !phrase.isEmpty {
                guard !phrase.contains("\"") else { return nil }
                name = phrase
            }
        }
        guard Self.isValid(address: address) else { return nil }
        if let name, name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) { return nil }
        self.init(address, displayName: name?.isEmpty == true ? nil : name)
    }

    /// Whether `address` is a `local@domain` this module will put in a header and an SMTP
    /// command: a dot-atom local part (UTF-8 allowed, RFC 6531) and a domain name or address
    /// literal. Nothing here can break out of `<…>` or end a command line.
    static func isValid(address: String) -> Bool {
        let bytes = Array(address.utf8)
        guard let at = bytes.lastIndex(of: UInt8(ascii: "@")), bytes.count <= 254 else { return false }
        let local = bytes[..<at]
        let domain = bytes[(at + 1)...]
        guard (1...64).contains(local.count), (1...253).contains(domain.count) else { return false }
        guard isDotAtom(local, allowed: { $0 >= 0x80 || isAtext($0) }) else { return false }
        if domain.first == UInt8(ascii: "[") {
            let inner = domain.dropFirst()
            guard inner.last == UInt8(ascii: "]"), inner.count > 1 else { return false }
            return inner.dropLast().allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":") }
        }
        guard isDotAtom(domain, allowed: { $0 >= 0x80 || isAlphanumeric($0) || $0 == UInt8(ascii: "-") }) else { return false }
        return domain.split(separator: UInt8(ascii: ".")).allSatisfy {
            $0.count <= 63 && $0.first != UInt8(ascii: "-") && $0.last != UInt8(ascii: "-")
        }
    }

    /// Atoms of `allowed` bytes joined by single dots.
    private static func isDotAtom(_ bytes: ArraySlice<UInt8>, allowed: (UInt8) -> Bool) -> Bool {
        let atoms = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return atoms.allSatisfy { !$0.isEmpty && $0.allSatisfy(allowed) }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// RFC 5322 §3.2.3 atext.
    static func isAtext(_ byte: UInt8) -> Bool {
        isAlphanumeric(byte) || Array("!#$%&'*+-/=?^_`{|}~".utf8).contains(byte)
    }

    /// The content of a quoted-string with its backslash escapes undone; nil if a quote is unescaped.
    private static func unquoted(_ content: Substring) -> String? {
        var result = ""
        var escaped = false
        for character in content {
            if escaped {
                result.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == "\"" {
                return nil
            } else {
                result.append(character)
            }
        }
        return escaped ? nil : result
    }
}
