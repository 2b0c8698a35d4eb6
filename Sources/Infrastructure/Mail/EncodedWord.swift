/// RFC 2047 encoded-words, `=?UTF-8?Q?…?=` or `=?UTF-8?B?…?=`, for non-ASCII text in headers.
enum EncodedWord {
    /// RFC 2047 §2: an encoded-word is at most 75 characters.
    static let maximumLength = 75
    private static let overhead = "=?UTF-8?Q??=".utf8.count

    /// Whether `text` cannot go in a header as it is: non-ASCII or control characters, or an
    /// "=?" a reader would take for the start of an encoded-word.
    static func isNeeded(for text: String) -> Bool {
        text.unicodeScalars.contains { $0.value < 0x20 || $0.value > 0x7E } || text.contains("=?")
    }

    /// `text` as encoded-words, each a whole number of characters (RFC 2047 §5) and at most 75
    /// characters long, the first at most `firstLength` (to fit after the field name). The
    /// shorter of "Q" and "B" is used; "Q" keeps to the characters allowed in a phrase, so the
    /// words fit a display name as well as a Subject.
    static func encode(_ text: String, firstLength: Int = maximumLength) -> [String] {
        let qLength = text.unicodeScalars.reduce(0) { $0 + qEncoded($1).utf8.count }
        let useQ = qLength <= MailBase64.encodedLength(text.utf8.count)
        func length(_ scalars: ArraySlice<Unicode.Scalar>) -> Int {
            let payload =
                useQ ? scalars.reduce(0) { $0 + qEncoded($1).utf8.count } : MailBase64.encodedLength(scalars.reduce(0) { $0 + String($1).utf8.count })
            return overhead + payload
        }
        func word(_ scalars: ArraySlice<Unicode.Scalar>) -> String {
            if useQ { return "=?UTF-8?Q?" + scalars.map(qEncoded).joined() + "?=" }
            return "=?UTF-8?B?" + MailBase64.encode(scalars.flatMap { Array(String($0).utf8) }) + "?="
        }
        var words: [String] = []
        var pending: [Unicode.Scalar] = []
        for scalar in text.unicodeScalars {
            pending.append(scalar)
            // Room for at least one character, whatever `firstLength` says.
            while pending.count > 1, length(pending[...]) > (words.isEmpty ? max(firstLength, 24) : maximumLength) {
                // After the last space if there is one: some readers (Python's email package) put
                // a space between encoded-words in a display name, against RFC 2047 §6.2, and a
                // doubled space does less harm than a split word.
                let cut = pending.dropLast().lastIndex(of: " ").map { $0 + 1 } ?? pending.count - 1
                words.append(word(pending[..<cut]))
                pending.removeFirst(cut)
            }
        }
        if !pending.isEmpty || words.isEmpty { words.append(word(pending[...])) }
        return words
    }

    /// RFC 2047 §5 (3): in a phrase only letters, digits and "!*+-/" may stand for themselves;
    /// "_" is the space.
    private static func qEncoded(_ scalar: Unicode.Scalar) -> String {
        switch scalar {
        case " ": "_"
        case "a"..."z", "A"..."Z", "0"..."9", "!", "*", "+", "-", "/": String(scalar)
        default: QuotedPrintable.hexEncoded(Array(String(scalar).utf8))
        }
    }
}
