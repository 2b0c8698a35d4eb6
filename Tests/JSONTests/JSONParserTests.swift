import TestSupport
import Testing
@testable import JSON

/// One input and what the parser must make of it, in the manner of JSONTestSuite.
struct ParseCase: Sendable, CustomTestStringConvertible {
    enum Outcome: Sendable, Equatable {
        case accept
        case reject(String)
    }

    let name: String
    let input: [UInt8]
    let outcome: Outcome

    init(_ name: String, _ text: String, _ outcome: Outcome) {
        self.init(name, Array(text.utf8), outcome)
    }

    init(_ name: String, _ bytes: [UInt8], _ outcome: Outcome) {
        self.name = name
        self.input = bytes
        self.outcome = outcome
    }

    var testDescription: String { name }
}

/// The error parsing `input` fails with, or `nil` when it parses.
func failure(_ input: [UInt8], limits: JSONLimits = .default) -> JSONError? {
    do {
        _ = try JSONParser.parse(input, limits: limits)
        return nil
    } catch {
        return error
    }
}

func failure(_ input: String, limits: JSONLimits = .default) -> JSONError? {
    failure(Array(input.utf8), limits: limits)
}

private func quoted(_ bytes: [UInt8]) -> [UInt8] {
    [UInt8(ascii: "\"")] + bytes + [UInt8(ascii: "\"")]
}

private func nested(_ depth: Int) -> String {
    String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
}

private let accepted: [ParseCase] = [
    // Scalars and whitespace.
    ParseCase("null", "null", .accept),
    ParseCase("true", "true", .accept),
    ParseCase("false", "false", .accept),
    ParseCase("zero", "0", .accept),
    ParseCase("negative zero", "-0", .accept),
    ParseCase("negative zero double", "-0.0", .accept),
    ParseCase("one", "1", .accept),
    ParseCase("negative", "-1", .accept),
    ParseCase("integer", "1234567890", .accept),
    ParseCase("fraction", "1.5", .accept),
    ParseCase("zero fraction", "0.0", .accept),
    ParseCase("exponent", "1e2", .accept),
    ParseCase("exponent upper", "1E2", .accept),
    ParseCase("exponent plus", "1e+2", .accept),
    ParseCase("exponent minus", "1e-2", .accept),
    ParseCase("exponent zero", "0e0", .accept),
    ParseCase("fraction and exponent", "-1.5e10", .accept),
    ParseCase("exponent leading zeros", "1e007", .accept),
    ParseCase("huge exponent literal", "1E400", .accept),
    ParseCase("tiny exponent literal", "1e-400", .accept),
    ParseCase("Int64 max", "9223372036854775807", .accept),
    ParseCase("Int64 min", "-9223372036854775808", .accept),
    ParseCase("beyond Int64", "-123456789012345678901234567890", .accept),
    ParseCase("empty string", "\"\"", .accept),
    ParseCase("string", "\"abc\"", .accept),
    ParseCase("surrounding whitespace", " \t\r\n1 \t\r\n", .accept),
    ParseCase("whitespace everywhere", " [ 1 , { \"a\" : 2 } ] ", .accept),
    // Containers.
    ParseCase("empty array", "[]", .accept),
    ParseCase("empty array with space", "[ ]", .accept),
    ParseCase("empty object", "{}", .accept),
    ParseCase("empty object with space", "{ }", .accept),
    ParseCase("array of scalars", "[null,true,false,0,\"\"]", .accept),
    ParseCase("object", "{\"a\":1,\"b\":[true]}", .accept),
    ParseCase("nested", "{\"a\":[{\"b\":[]}]}", .accept),
    ParseCase("array in array", "[[],[[]]]", .accept),
    ParseCase("empty key", "{\"\":0}", .accept),
    ParseCase("keys differ in case", "{\"a\":1,\"A\":2}", .accept),
    ParseCase("keys differ in normalization", "{\"\\u00e9\":1,\"e\\u0301\":2}", .accept),
    ParseCase("depth 32", nested(32), .accept),
    // Escapes.
    ParseCase("escaped quote", #""\"""#, .accept),
    ParseCase("escaped backslash", #""\\""#, .accept),
    ParseCase("escaped slash", #""\/""#, .accept),
    ParseCase("short escapes", #""\b\f\n\r\t""#, .accept),
    ParseCase("escaped NUL", #""\u0000""#, .accept),
    ParseCase("escape lowercase hex", #""\u00e9""#, .accept),
    ParseCase("escape uppercase hex", #""\u00E9""#, .accept),
    ParseCase("escape BMP", #""\u20AC""#, .accept),
    ParseCase("escape U+FFFF", #""\uFFFF""#, .accept),
    ParseCase("surrogate pair", #""\uD83D\uDE00""#, .accept),
    ParseCase("surrogate pair max", #""\uDBFF\uDFFF""#, .accept),
    ParseCase("surrogate pair min", #""\uD800\uDC00""#, .accept),
    ParseCase("escapes between text", #""a\nb\u0041c""#, .accept),
    // Raw UTF-8.
    ParseCase("two-byte", quoted([0xC3, 0xA9]), .accept),
    ParseCase("three-byte", quoted([0xE2, 0x82, 0xAC]), .accept),
    ParseCase("four-byte", quoted([0xF0, 0x9F, 0x98, 0x80]), .accept),
    ParseCase("U+0080", quoted([0xC2, 0x80]), .accept),
    ParseCase("U+0800", quoted([0xE0, 0xA0, 0x80]), .accept),
    ParseCase("U+D7FF", quoted([0xED, 0x9F, 0xBF]), .accept),
    ParseCase("U+E000", quoted([0xEE, 0x80, 0x80]), .accept),
    ParseCase("U+FFFF", quoted([0xEF, 0xBF, 0xBF]), .accept),
    ParseCase("U+10000", quoted([0xF0, 0x90, 0x80, 0x80]), .accept),
    ParseCase("U+10FFFF", quoted([0xF4, 0x8F, 0xBF, 0xBF]), .accept),
    ParseCase("DEL unescaped", quoted([0x7F]), .accept),
    ParseCase("UTF-8 after an escape", [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n"), 0xC3, 0xA9, UInt8(ascii: "\"")], .accept),
]

private let rejected: [ParseCase] = [
    // Empty and truncated input.
    ParseCase("empty input", "", .reject("unexpected_end")),
    ParseCase("only whitespace", " \n\t\r ", .reject("unexpected_end")),
    ParseCase("open array", "[", .reject("unexpected_end")),
    ParseCase("open object", "{", .reject("unexpected_end")),
    ParseCase("array after element", "[1", .reject("unexpected_end")),
    ParseCase("array after comma", "[1,", .reject("unexpected_end")),
    ParseCase("object after key", "{\"a\"", .reject("unexpected_end")),
    ParseCase("object after colon", "{\"a\":", .reject("unexpected_end")),
    ParseCase("object after value", "{\"a\":1", .reject("unexpected_end")),
    ParseCase("object after comma", "{\"a\":1,", .reject("unexpected_end")),
    ParseCase("open string", "\"abc", .reject("unexpected_end")),
    ParseCase("open escape", "\"\\", .reject("unexpected_end")),
    ParseCase("short unicode escape at end", "\"\\u12", .reject("unexpected_end")),
    ParseCase("high surrogate at end", "\"\\uD83D", .reject("unexpected_end")),
    ParseCase("high surrogate then backslash at end", "\"\\uD83D\\", .reject("unexpected_end")),
    ParseCase("truncated UTF-8 at end", [UInt8(ascii: "\""), 0xE2, 0x82], .reject("unexpected_end")),
    ParseCase("tru", "tru", .reject("unexpected_end")),
    ParseCase("fals", "fals", .reject("unexpected_end")),
    ParseCase("nul", "nul", .reject("unexpected_end")),
    ParseCase("minus alone", "-", .reject("unexpected_end")),
    ParseCase("dot at end", "1.", .reject("unexpected_end")),
    ParseCase("e at end", "1e", .reject("unexpected_end")),
    ParseCase("e sign at end", "1e+", .reject("unexpected_end")),
    // Syntax.
    ParseCase("Capitalized True", "True", .reject("invalid_json")),
    ParseCase("nulx", "nulx", .reject("invalid_json")),
    ParseCase("NaN", "NaN", .reject("invalid_json")),
    ParseCase("Infinity", "Infinity", .reject("invalid_json")),
    ParseCase("undefined", "undefined", .reject("invalid_json")),
    ParseCase("leading plus", "+1", .reject("invalid_json")),
    ParseCase("leading dot", ".5", .reject("invalid_json")),
    ParseCase("trailing comma in array", "[1,]", .reject("invalid_json")),
    ParseCase("trailing comma in object", "{\"a\":1,}", .reject("invalid_json")),
    ParseCase("leading comma", "[,1]", .reject("invalid_json")),
    ParseCase("double comma", "[1,,2]", .reject("invalid_json")),
    ParseCase("lone comma in object", "{,}", .reject("invalid_json")),
    ParseCase("missing comma", "[1 2]", .reject("invalid_json")),
    ParseCase("missing comma between members", "{\"a\":1 \"b\":2}", .reject("invalid_json")),
    ParseCase("missing colon", "{\"a\" 1}", .reject("invalid_json")),
    ParseCase("key without value", "{\"a\"}", .reject("invalid_json")),
    ParseCase("unquoted key", "{a:1}", .reject("invalid_json")),
    ParseCase("number key", "{1:2}", .reject("invalid_json")),
    ParseCase("single-quoted key", "{'a':1}", .reject("invalid_json")),
    ParseCase("single-quoted string", "['a']", .reject("invalid_json")),
    ParseCase("colon in array", "[1:2]", .reject("invalid_json")),
    ParseCase("mismatched close bracket", "{\"a\":1]", .reject("invalid_json")),
    ParseCase("mismatched close brace", "[1}", .reject("invalid_json")),
    ParseCase("close bracket alone", "]", .reject("invalid_json")),
    ParseCase("close brace alone", "}", .reject("invalid_json")),
    ParseCase("line comment", "//c\n1", .reject("invalid_json")),
    ParseCase("block comment", "/*c*/1", .reject("invalid_json")),
    ParseCase("comment inside array", "[1/*c*/]", .reject("invalid_json")),
    ParseCase("hex number in array", "[0x1]", .reject("invalid_json")),
    ParseCase("bad literal in array", "[tru]", .reject("invalid_json")),
    ParseCase("byte order mark", [0xEF, 0xBB, 0xBF, UInt8(ascii: "1")], .reject("invalid_json")),
    ParseCase("form feed is not whitespace", "\u{0C}1", .reject("invalid_json")),
    ParseCase("vertical tab is not whitespace", "\u{0B}1", .reject("invalid_json")),
    ParseCase("no-break space is not whitespace", [0xC2, 0xA0, UInt8(ascii: "1")], .reject("invalid_json")),
    ParseCase("non-ASCII outside strings", [UInt8(ascii: "["), 0xC3, 0xA9, UInt8(ascii: "]")], .reject("invalid_json")),
    ParseCase("invalid byte outside strings", [0xFF], .reject("invalid_json")),
    // Numbers.
    ParseCase("leading zero", "01", .reject("invalid_number")),
    ParseCase("negative leading zero", "-01", .reject("invalid_number")),
    ParseCase("double zero", "00", .reject("invalid_number")),
    ParseCase("negative double zero", "-00", .reject("invalid_number")),
    ParseCase("leading zero in array", "[01]", .reject("invalid_number")),
    ParseCase("minus Infinity", "-Infinity", .reject("invalid_number")),
    ParseCase("double minus", "--1", .reject("invalid_number")),
    ParseCase("minus dot", "-.5", .reject("invalid_number")),
    ParseCase("minus in array", "[-]", .reject("invalid_number")),
    ParseCase("dot without digits", "[1.]", .reject("invalid_number")),
    ParseCase("dot then letter", "1.a", .reject("invalid_number")),
    ParseCase("dot then exponent", "1.e5", .reject("invalid_number")),
    ParseCase("exponent without digits", "[1e]", .reject("invalid_number")),
    ParseCase("exponent sign without digits", "[1e+]", .reject("invalid_number")),
    ParseCase("upper exponent sign without digits", "[1E-]", .reject("invalid_number")),
    ParseCase("101 digits", String(repeating: "1", count: 101), .reject("number_too_long")),
    ParseCase("100 digits", String(repeating: "1", count: 100), .accept),
    // Escapes.
    ParseCase("unknown escape x", #""\x41""#, .reject("invalid_escape")),
    ParseCase("unknown escape a", #""\a""#, .reject("invalid_escape")),
    ParseCase("escaped apostrophe", #""\'""#, .reject("invalid_escape")),
    ParseCase("escaped zero", #""\0""#, .reject("invalid_escape")),
    ParseCase("escaped space", #""\ ""#, .reject("invalid_escape")),
    ParseCase("uppercase U escape", #""\U0041""#, .reject("invalid_escape")),
    ParseCase("bad hex digit", #""\u12G4""#, .reject("invalid_escape")),
    ParseCase("short unicode escape", #""\u12""#, .reject("invalid_escape")),
    ParseCase("empty unicode escape", #""\u""#, .reject("invalid_escape")),
    ParseCase("lone high surrogate", #""\uD800""#, .reject("invalid_escape")),
    ParseCase("lone low surrogate", #""\uDC00""#, .reject("invalid_escape")),
    ParseCase("lone low surrogate max", #""\uDFFF""#, .reject("invalid_escape")),
    ParseCase("high surrogate then text", #""\uD800x""#, .reject("invalid_escape")),
    ParseCase("high surrogate then BMP escape", #""\uD800\u0041""#, .reject("invalid_escape")),
    ParseCase("high surrogate then short escape", #""\uD800\n""#, .reject("invalid_escape")),
    ParseCase("two high surrogates", #""\uDBFF\uDBFF""#, .reject("invalid_escape")),
    ParseCase("reversed surrogates", #""\uDE00\uD83D""#, .reject("invalid_escape")),
    // Control characters.
    ParseCase("raw NUL", quoted([0x00]), .reject("control_character")),
    ParseCase("raw 0x01", quoted([0x01]), .reject("control_character")),
    ParseCase("raw tab", quoted([0x09]), .reject("control_character")),
    ParseCase("raw line feed", quoted([0x0A]), .reject("control_character")),
    ParseCase("raw carriage return", quoted([0x0D]), .reject("control_character")),
    ParseCase("raw 0x1F", quoted([0x1F]), .reject("control_character")),
    ParseCase("raw tab in key", "{\"a\tb\":1}", .reject("control_character")),
    ParseCase("raw tab after escape", "\"\\n\t\"", .reject("control_character")),
    // Invalid UTF-8, class by class.
    ParseCase("lone continuation 0x80", quoted([0x80]), .reject("invalid_utf8")),
    ParseCase("lone continuation 0xBF", quoted([0xBF]), .reject("invalid_utf8")),
    ParseCase("overlong NUL C0 80", quoted([0xC0, 0x80]), .reject("invalid_utf8")),
    ParseCase("overlong C1 BF", quoted([0xC1, 0xBF]), .reject("invalid_utf8")),
    ParseCase("overlong three-byte E0 80 80", quoted([0xE0, 0x80, 0x80]), .reject("invalid_utf8")),
    ParseCase("overlong three-byte E0 9F BF", quoted([0xE0, 0x9F, 0xBF]), .reject("invalid_utf8")),
    ParseCase("overlong four-byte F0 80 80 80", quoted([0xF0, 0x80, 0x80, 0x80]), .reject("invalid_utf8")),
    ParseCase("overlong four-byte F0 8F BF BF", quoted([0xF0, 0x8F, 0xBF, 0xBF]), .reject("invalid_utf8")),
    ParseCase("encoded high surrogate", quoted([0xED, 0xA0, 0x80]), .reject("invalid_utf8")),
    ParseCase("encoded low surrogate", quoted([0xED, 0xB0, 0x80]), .reject("invalid_utf8")),
    ParseCase("encoded U+DFFF", quoted([0xED, 0xBF, 0xBF]), .reject("invalid_utf8")),
    ParseCase("encoded surrogate pair", quoted([0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80]), .reject("invalid_utf8")),
    ParseCase("U+110000", quoted([0xF4, 0x90, 0x80, 0x80]), .reject("invalid_utf8")),
    ParseCase("lead F5", quoted([0xF5, 0x80, 0x80, 0x80]), .reject("invalid_utf8")),
    ParseCase("lead F7", quoted([0xF7, 0xBF, 0xBF, 0xBF]), .reject("invalid_utf8")),
    ParseCase("five-byte form", quoted([0xF8, 0x88, 0x80, 0x80, 0x80]), .reject("invalid_utf8")),
    ParseCase("six-byte form", quoted([0xFC, 0x84, 0x80, 0x80, 0x80, 0x80]), .reject("invalid_utf8")),
    ParseCase("byte FE", quoted([0xFE]), .reject("invalid_utf8")),
    ParseCase("byte FF", quoted([0xFF]), .reject("invalid_utf8")),
    ParseCase("truncated two-byte", quoted([0xC3]), .reject("invalid_utf8")),
    ParseCase("truncated three-byte", quoted([0xE2, 0x82]), .reject("invalid_utf8")),
    ParseCase("truncated four-byte", quoted([0xF0, 0x9F, 0x98]), .reject("invalid_utf8")),
    ParseCase("lead followed by ASCII", quoted([0xE2, UInt8(ascii: "a"), UInt8(ascii: "b")]), .reject("invalid_utf8")),
    ParseCase("lead followed by lead", quoted([0xC3, 0xC3, 0xA9]), .reject("invalid_utf8")),
    ParseCase("invalid UTF-8 in key", [UInt8(ascii: "{")] + quoted([0xFF]) + Array(":1}".utf8), .reject("invalid_utf8")),
    ParseCase(
        "invalid UTF-8 after escape", [UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "n"), 0xC0, 0xAF, UInt8(ascii: "\"")],
        .reject("invalid_utf8")),
    // Duplicate keys.
    ParseCase("duplicate key", "{\"a\":1,\"a\":2}", .reject("duplicate_key")),
    ParseCase("duplicate key, same value", "{\"a\":1,\"a\":1}", .reject("duplicate_key")),
    ParseCase("duplicate key not adjacent", "{\"a\":1,\"b\":2,\"a\":3}", .reject("duplicate_key")),
    ParseCase("duplicate key via escape", "{\"a\":1,\"\\u0061\":2}", .reject("duplicate_key")),
    ParseCase("duplicate key nested", "{\"x\":{\"a\":null,\"a\":null}}", .reject("duplicate_key")),
    ParseCase(
        "duplicate key in a large object",
        "{" + (0..<20).map { "\"k\($0)\":\($0)" }.joined(separator: ",") + ",\"k3\":0}", .reject("duplicate_key")),
    // Trailing data.
    ParseCase("two numbers", "1 2", .reject("trailing_data")),
    ParseCase("two arrays", "[] []", .reject("trailing_data")),
    ParseCase("object then letter", "{}x", .reject("trailing_data")),
    ParseCase("two strings", "\"a\"\"b\"", .reject("trailing_data")),
    ParseCase("value then comma", "null,", .reject("trailing_data")),
    ParseCase("extra close", "{\"a\":1}}", .reject("trailing_data")),
    ParseCase("trailing comment", "1 // c", .reject("trailing_data")),
    ParseCase("literal then letter", "truex", .reject("trailing_data")),
    ParseCase("hex number", "0x1", .reject("trailing_data")),
    ParseCase("NUL after value", [UInt8(ascii: "1"), 0x00], .reject("trailing_data")),
    ParseCase("key-value at top level", "\"a\":1", .reject("trailing_data")),
    // Depth.
    ParseCase("depth 33", nested(33), .reject("too_deep")),
    ParseCase(
        "depth 33 objects",
        String(repeating: "{\"a\":", count: 33) + "1" + String(repeating: "}", count: 33), .reject("too_deep")),
    ParseCase("depth 33 unclosed", String(repeating: "[", count: 33), .reject("too_deep")),
]

@Suite(.testThreads) struct JSONParserTests {
    @Test(arguments: accepted + rejected)
    func table(_ testCase: ParseCase) {
        switch testCase.outcome {
        case .accept:
            #expect(failure(testCase.input) == nil)
        case .reject(let code):
            #expect(failure(testCase.input)?.code.rawValue == code)
        }
    }

    @Test func tableIsLargeEnough() {
        #expect(accepted.count + rejected.count >= 120)
    }

    @Test func parsedScalars() throws {
        #expect(try JSONParser.parse("null") == .null)
        #expect(try JSONParser.parse("true") == .bool(true))
        #expect(try JSONParser.parse(" false ") == .bool(false))
        #expect(try JSONParser.parse("\"abc\"") == .string("abc"))
        #expect(try JSONParser.parse("-12").int64Value == -12)
    }

    @Test func escapesDecode() throws {
        let value = try JSONParser.parse(#""\"\\\/\b\f\n\r\t\u0000\u00e9\u20AC\uD83D\uDE00x""#)
        #expect(value.stringValue == "\"\\/\u{08}\u{0C}\n\r\t\u{00}é€😀x")
        #expect(try JSONParser.parse(#""\uDBFF\uDFFF""#).stringValue == "\u{10FFFF}")
    }

    @Test func rawUTF8Decodes() throws {
        #expect(try JSONParser.parse(quoted([0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80])).stringValue == "é€😀")
    }

    @Test func decomposedAndPrecomposedKeysStayDistinct() throws {
        let object = try #require(try JSONParser.parse("{\"\\u00e9\":1,\"e\\u0301\":2}").objectValue)
        #expect(object.count == 2)
        #expect(object["\u{E9}"] == 1)
        #expect(object["e\u{301}"] == 2)
    }

    @Test func depthExactlyAtTheLimit() throws {
        var value = try JSONParser.parse(nested(32))
        var depth = 0
        while let inner = value.arrayValue {
            depth += 1
            value = inner.first ?? .null
        }
        #expect(depth == 32)
        #expect(throws: Never.self) { try JSONParser.parse(nested(5), limits: JSONLimits(maxDepth: 5)) }
        #expect(throws: JSONError.self) { try JSONParser.parse(nested(6), limits: JSONLimits(maxDepth: 5)) }
        #expect(throws: Never.self) { try JSONParser.parse("1", limits: JSONLimits(maxDepth: 0)) }
        #expect(throws: JSONError.self) { try JSONParser.parse("[]", limits: JSONLimits(maxDepth: 0)) }
    }

    @Test func tooDeepFailsFastAtTheOffendingBracket() {
        let tooDeep = JSONError(code: .tooDeep, byteOffset: 32, reason: "the document is nested too deeply")
        let input = [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000)
        #expect(throws: tooDeep) { try JSONParser.parse(input) }
        // Refused at the offending bracket, before the byte after it is read: a parser that went
        // on through the megabyte (pushing every level, or scanning it first) and judged the depth
        // later would meet the stray "x" first and call the document invalid there.
        let strayAfter =
            [UInt8](repeating: UInt8(ascii: "["), count: 33) + [UInt8(ascii: "x")]
            + [UInt8](repeating: UInt8(ascii: "["), count: 1_000_000 - 34)
        #expect(throws: tooDeep) { try JSONParser.parse(strayAfter) }
    }

    @Test func deepNestingWithAGenerousLimitDoesNotRecurse() throws {
        // 100,000 levels would overflow the stack of a recursive parser.
        let limits = JSONLimits(maxDepth: 200_000, maxBytes: 1 << 20)
        var current = try JSONParser.parse(nested(100_000), limits: limits)
        // Releasing such a value recurses (Swift frees enums recursively), so take it apart level
        // by level instead.
        var depth = 0
        while case .array(var elements) = current, let inner = elements.popLast() {
            current = inner
            depth += 1
        }
        #expect(depth == 99_999)
    }

    @Test func tooLargeIsRefusedBeforeParsing() {
        // Invalid content: a parse would fail differently, so the size check must come first.
        let input = [UInt8](repeating: UInt8(ascii: "x"), count: (1 << 20) + 1)
        #expect(failure(input)?.code == .tooLarge)
        let limits = JSONLimits(maxBytes: 4)
        #expect(throws: Never.self) { try JSONParser.parse("1234", limits: limits) }
        #expect(failure("12345", limits: limits)?.code == .tooLarge)
    }

    @Test func stringLimitCountsUnescapedBytes() throws {
        let limits = JSONLimits(maxStringBytes: 4)
        #expect(try JSONParser.parse("\"abcd\"", limits: limits) == "abcd")
        #expect(try JSONParser.parse(#""\u00e9\u00e9""#, limits: limits) == "éé")
        #expect(failure("\"abcde\"", limits: limits)?.code == .stringTooLong)
        #expect(failure(#""\u00e9\u00e9a""#, limits: limits)?.code == .stringTooLong)
        #expect(failure("{\"abcde\":1}", limits: limits)?.code == .stringTooLong)
    }

    @Test func keyLimitPerObject() throws {
        let limits = JSONLimits(maxKeysPerObject: 2)
        #expect(throws: Never.self) { try JSONParser.parse("{\"a\":{\"x\":1,\"y\":2},\"b\":2}", limits: limits) }
        #expect(
            failure("{\"a\":1,\"b\":2,\"c\":3}", limits: limits)
                == JSONError(code: .tooManyKeys, byteOffset: 13, reason: "the object has too many keys"))
    }

    @Test func numberLengthLimit() {
        let limits = JSONLimits(maxNumberLength: 3)
        #expect(throws: Never.self) { try JSONParser.parse("-1.5", limits: JSONLimits(maxNumberLength: 4)) }
        #expect(
            failure("[1.25]", limits: limits)
                == JSONError(code: .numberTooLong, byteOffset: 1, reason: "the number is too long"))
    }

    @Test(arguments: [
        ("[1,]", 3),
        ("{\"a\":1,\"a\":2}", 7),
        ("  1 x", 4),
        ("[\"\\uD800\"]", 2),
        ("\"ab\u{01}\"", 3),
        ("[01]", 1),
        ("", 0),
        ("[1", 2),
    ])
    func errorOffsets(input: String, offset: Int) {
        #expect(failure(input)?.byteOffset == offset)
    }

    @Test func invalidUTF8OffsetPointsAtTheLeadByte() {
        #expect(failure(quoted([UInt8(ascii: "a"), 0xED, 0xA0, 0x80]))?.byteOffset == 2)
    }

    @Test func errorDescriptionNeverEchoesInput() throws {
        let secret = "hunter2-password"
        let inputs = ["{\"password\":\"\(secret)\" \"x\"}", "\(secret)", "[\"\(secret)\\q\"]", "{\"\(secret)\":1,\"\(secret)\":2}"]
        for input in inputs {
            let error = try #require(failure(input))
            #expect(!error.description.contains("hunter"))
            #expect(!error.debugDescription.contains("hunter"))
            #expect(error.description.utf8.count < 80)
        }
    }

    @Test func inputFormsAgree() throws {
        let text = "{\"a\":[1,\"é\"]}"
        let expected: JSONValue = ["a": [1, "é"]]
        #expect(try JSONParser.parse(text) == expected)
        #expect(try JSONParser.parse(Array(text.utf8)) == expected)
        #expect(try JSONParser.parse(Array(text.utf8)[...]) == expected)
        #expect(try JSONParser.parse(text.utf8) == expected)
        #expect(try Array(text.utf8).withUnsafeBytes { try JSONParser.parse($0) } == expected)
        // A collection without contiguous storage takes the copying path.
        #expect(try JSONParser.parse(text.utf8.lazy.map { $0 }) == expected)
    }

    @Test func parsesAMebibyteQuickly() throws {
        var document = "["
        var index = 0
        while document.utf8.count < 1_000_000 {
            if index > 0 { document += "," }
            document += #"{"id":\#(index),"name":"user \#(index) \u00e9\n","height":177.5,"tags":["a","b"],"ok":true,"x":null}"#
            index += 1
        }
        document += "]"
        let bytes = Array(document.utf8)
        let clock = ContinuousClock()
        var value: JSONValue = .null
        let elapsed = try clock.measure { value = try JSONParser.parse(bytes) }
        #expect(value.arrayValue?.count == index)
        // Only against a blow-up (work quadratic in the bytes, say, 10^12 steps here): far beyond
        // any slow machine running the suite. How fast a release build parses (a few
        // milliseconds) is not this test's claim.
        #expect(elapsed < .seconds(60), "took \(elapsed)")
    }
}
