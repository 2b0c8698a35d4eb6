/// The few elements read from S3's XML answers (`ListBucketResult`, `Error`): no namespaces,
/// attributes or nesting of a name inside itself, which S3's answers never use. Not a general parser.
enum S3XML {
    /// The text inside each `<name>…</name>` (or nothing for `<name/>`) in `text`, in order.
    static func elements(_ name: String, in text: Substring) -> [Substring] {
        let open = "<\(name)>"
        let close = "</\(name)>"
        var found: [Substring] = []
        var rest = text
        while let start = rest.firstRange(of: open) {
            guard let end = rest[start.upperBound...].firstRange(of: close) else { break }
            found.append(rest[start.upperBound..<end.lowerBound])
            rest = rest[end.upperBound...]
        }
        return found
    }

    /// The first `<name>`'s text, entities decoded.
    static func value(_ name: String, in text: Substring) -> String? {
        elements(name, in: text).first.map { decodeEntities($0) }
    }

    /// `&amp; &lt; &gt; &quot; &apos;` and numeric references.
    static func decodeEntities(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var result = ""
        var rest = text
        while let amp = rest.firstIndex(of: "&") {
            result += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": result += "&"
            case "lt": result += "<"
            case "gt": result += ">"
            case "quot": result += "\""
            case "apos": result += "'"
            default:
                let number =
                    entity.hasPrefix("#x") ? UInt32(entity.dropFirst(2), radix: 16) : entity.hasPrefix("#") ? UInt32(entity.dropFirst()) : nil
                if let number, let scalar = Unicode.Scalar(number) { result.unicodeScalars.append(scalar) } else { result += "&\(entity);" }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return result + rest
    }

    /// A key of a listing asked with `encoding-type=url`: `+` is a space, `%XX` a byte.
    static func decodeURLEncoded(_ text: String) -> String {
        var bytes: [UInt8] = []
        var utf8 = text.utf8[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if byte == UInt8(ascii: "%"), utf8.count >= 2, let value = UInt8(String(decoding: utf8.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
