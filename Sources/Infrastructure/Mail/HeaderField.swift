/// Header fields as written on the wire: folded (RFC 5322 §2.2.3) so that lines stay within 78
/// characters where possible, and never able to end early: a value's control characters,
/// CR and LF among them, are turned into spaces.
enum HeaderField {
    static let preferredLineLength = 78

    /// `Name: value` for values this module writes itself ("1.0", a content type), with a
    /// fold allowed before each parameter.
    static func simple(_ name: String, _ value: String, parameters: [String] = []) -> String {
        folded(
            name,
            atoms: [" " + value + (parameters.isEmpty ? "" : ";")]
                + parameters.enumerated().map { index, parameter in
                    " " + parameter + (index == parameters.count - 1 ? "" : ";")
                })
    }

    /// An unstructured field (Subject): as it is when it is printable ASCII, else encoded-words.
    static func unstructured(_ name: String, _ text: String) -> String {
        let text = singleLine(text)
        guard !text.isEmpty else { return "\(name):\r\n" }
        if !EncodedWord.isNeeded(for: text), let atoms = plainAtoms(text, fieldName: name) { return folded(name, atoms: atoms) }
        return folded(name, atoms: encodedAtoms(text, fieldName: name))
    }

    /// A mailbox field (From, To): `Name <address>`, or the bare address without a name.
    static func mailbox(_ name: String, _ mailbox: MailAddress) -> String {
        let address = String(String.UnicodeScalarView(mailbox.address.unicodeScalars.filter { !isControl($0) && $0 != " " }))
        guard let displayName = mailbox.displayName.map(singleLine), !displayName.isEmpty else {
            return folded(name, atoms: [" " + address])
        }
        return folded(name, atoms: phraseAtoms(displayName, fieldName: name) + [" <\(address)>"])
    }

    /// A display name (RFC 5322 §3.2.5 phrase): atoms as they are, a quoted-string when ASCII
    /// punctuation needs one, else encoded-words.
    private static func phraseAtoms(_ text: String, fieldName: String) -> [String] {
        if !EncodedWord.isNeeded(for: text) {
            if text.utf8.allSatisfy({ MailAddress.isAtext($0) || $0 == UInt8(ascii: " ") }), let atoms = plainAtoms(text, fieldName: fieldName) {
                return atoms
            }
            var quoted = "\""
            for character in text {
                if character == "\"" || character == "\\" { quoted.append("\\") }
                quoted.append(character)
            }
            quoted += "\""
            if quoted.utf8.count < preferredLineLength - fieldName.utf8.count - 2 { return [" " + quoted] }
        }
        return encodedAtoms(text, fieldName: fieldName)
    }

    /// The text cut before each run of whitespace, where a fold may go; nil when a word is too
    /// long to fit on a line.
    private static func plainAtoms(_ text: String, fieldName: String) -> [String]? {
        var atoms: [String] = []
        var current = " "
        var inWord = false
        for character in text {
            let isSpace = character == " "
            if isSpace, inWord {
                atoms.append(current)
                current = ""
            }
            current.append(character)
            inWord = !isSpace
        }
        atoms.append(current)
        guard let first = atoms.first, fieldName.utf8.count + 1 + first.utf8.count <= preferredLineLength,
            atoms.allSatisfy({ $0.utf8.count < preferredLineLength })
        else { return nil }
        return atoms
    }

    private static func encodedAtoms(_ text: String, fieldName: String) -> [String] {
        EncodedWord.encode(text, firstLength: preferredLineLength - fieldName.utf8.count - 2).map { " " + $0 }
    }

    /// `Name:` and the atoms, each of which starts with the whitespace a fold may go before:
    /// a line is broken there when the atom would take it past 78 characters.
    static func folded(_ name: String, atoms: [String]) -> String {
        var result = ""
        var line = name + ":"
        var lineHasAtom = false
        for atom in atoms {
            if lineHasAtom, line.utf8.count + atom.utf8.count > preferredLineLength {
                result += line + "\r\n"
                line = ""
            }
            line += atom
            lineHasAtom = true
        }
        return result + line + "\r\n"
    }

    /// Control characters (CR, LF, tab…) as spaces, without leading and trailing whitespace.
    static func singleLine(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { isControl($0) ? " " : $0 })).trimmingWhitespace()
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control
    }
}
