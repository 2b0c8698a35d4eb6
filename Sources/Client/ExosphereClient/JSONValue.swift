import Foundation

/// A JSON value that keeps the kind of its number literals: `78` is an integer, `78.0` a double.
///
/// The server gives a custom field its type from the literal of its first write, so the client
/// must write `180.0` for a double; `JSONEncoder` writes it as `180`, and `JSONSerialization`
/// does not say which literal it read. Hence this small parser and writer.
enum JSONValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case integer(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    var intValue: Int? {
        if case .integer(let number) = self { return number }
        return nil
    }

    var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    var isNull: Bool { self == .null }
}

// MARK: - Parsing

extension JSONValue {
    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    /// Parses one JSON document (RFC 8259), nested at most `maxDepth` levels.
    static func parse(_ data: Data, maxDepth: Int = 64) throws -> JSONValue {
        var parser = Parser(bytes: [UInt8](data), maxDepth: maxDepth)
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.failure("trailing characters") }
        return value
    }

    private struct Parser {
        let bytes: [UInt8]
        let maxDepth: Int
        var index = 0

        init(bytes: [UInt8], maxDepth: Int) {
            self.bytes = bytes
            self.maxDepth = maxDepth
        }

        func failure(_ what: String) -> ParseError { ParseError(description: "invalid JSON at byte \(index): \(what)") }

        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func expect(_ literal: String, _ value: JSONValue) throws -> JSONValue {
            let expected = Array(literal.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<(index + expected.count)]) == expected else {
                throw failure("expected \(literal)")
            }
            index += expected.count
            return value
        }

        mutating func value(depth: Int) throws -> JSONValue {
            guard depth <= maxDepth else { throw failure("nested too deeply") }
            guard index < bytes.count else { throw failure("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try expect("true", .bool(true))
            case UInt8(ascii: "f"): return try expect("false", .bool(false))
            case UInt8(ascii: "n"): return try expect("null", .null)
            default: return try number()
            }
        }

        mutating func object(depth: Int) throws -> JSONValue {
            index += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw failure("expected a key") }
                let key = try string()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw failure("expected :") }
                index += 1
                skipWhitespace()
                members[key] = try value(depth: depth + 1)
                skipWhitespace()
                guard index < bytes.count else { throw failure("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "}") else { throw failure("expected , or }") }
                index += 1
                return .object(members)
            }
        }

        mutating func array(depth: Int) throws -> JSONValue {
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try value(depth: depth + 1))
                skipWhitespace()
                guard index < bytes.count else { throw failure("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "]") else { throw failure("expected , or ]") }
                index += 1
                return .array(elements)
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard bytes.count - index >= 4 else { throw failure("short \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case 0x30...0x39: digit = byte - 0x30
                case 0x41...0x46: digit = byte - 0x41 + 10
                case 0x61...0x66: digit = byte - 0x61 + 10
                default: throw failure("bad \\u escape")
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }

        mutating func string() throws -> String {
            index += 1
            var scalars = String.UnicodeScalarView()
            var start = index
            func flush(_ parser: Parser, _ scalars: inout String.UnicodeScalarView, upTo end: Int) throws {
                guard start < end else { return }
                // `String(validating:as:)` needs iOS 18; Foundation's initialiser refuses invalid UTF-8 too.
                guard let text = String(bytes: parser.bytes[start..<end], encoding: .utf8) else {
                    throw parser.failure("invalid UTF-8")
                }
                scalars.append(contentsOf: text.unicodeScalars)
            }
            while true {
                guard index < bytes.count else { throw failure("unterminated string") }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    try flush(self, &scalars, upTo: index)
                    index += 1
                    return String(scalars)
                }
                guard byte >= 0x20 else { throw failure("control character in a string") }
                guard byte == UInt8(ascii: "\\") else {
                    index += 1
                    continue
                }
                try flush(self, &scalars, upTo: index)
                index += 1
                guard index < bytes.count else { throw failure("unterminated escape") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw failure("lone surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw failure("lone surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw failure("lone surrogate") }
                    scalars.append(scalar)
                default:
                    throw failure("bad escape")
                }
                start = index
            }
        }

        mutating func number() throws -> JSONValue {
            let start = index
            var isInteger = true
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            func digits(_ parser: inout Parser) -> Int {
                let from = parser.index
                while parser.index < parser.bytes.count, (0x30...0x39).contains(parser.bytes[parser.index]) { parser.index += 1 }
                return parser.index - from
            }
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw failure("unexpected character") }
            guard integerDigits == 1 || bytes[index - integerDigits] != UInt8(ascii: "0") else { throw failure("leading zero") }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                guard digits(&self) > 0 else { throw failure("expected digits after .") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw failure("expected exponent digits") }
            }
            let literal = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, let integer = Int(literal) { return .integer(integer) }
            guard let double = Double(literal), double.isFinite else { throw failure("number out of range") }
            return .double(double)
        }
    }
}

// MARK: - Writing

extension JSONValue {
    struct WriteError: Error, CustomStringConvertible {
        let description: String
    }

    /// The UTF-8 JSON text; a double is always written with a fraction or an exponent (`180.0`),
    /// so the server reads it as a double. NaN and infinities have no JSON form and throw.
    func serialized() throws -> Data {
        var output = ""
        try write(into: &output)
        return Data(output.utf8)
    }

    func write(into output: inout String) throws {
        switch self {
        case .null: output += "null"
        case .bool(let flag): output += flag ? "true" : "false"
        case .integer(let number): output += String(number)
        case .double(let number): output += try JSONValue.literal(number)
        case .string(let text): JSONValue.writeString(text, into: &output)
        case .array(let elements):
            output += "["
            for (position, element) in elements.enumerated() {
                if position > 0 { output += "," }
                try element.write(into: &output)
            }
            output += "]"
        case .object(let members):
            output += "{"
            for (position, key) in members.keys.sorted().enumerated() {
                if position > 0 { output += "," }
                JSONValue.writeString(key, into: &output)
                output += ":"
                try members[key]!.write(into: &output)
            }
            output += "}"
        }
    }

    /// `177.5`, `180.0`, `1e+300`: Swift's shortest round-trip form, with `.0` added where it
    /// would otherwise read as an integer.
    static func literal(_ number: Double) throws -> String {
        guard number.isFinite else { throw WriteError(description: "\(number) has no JSON form") }
        let text = "\(number)"
        return text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
    }

    static func writeString(_ text: String, into output: inout String) {
        output += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}
