import TestSupport
import Testing
@testable import JSON

@Suite(.testThreads) struct JSONValueSerializationTests {
    @Test(arguments: [
        "null", "true", "false", "0", "-0", "2", "2.0", "1E400", "-1.5e-7", "\"\"",
        #""\"\\\/\b\f\n\r\t\u0000\u001F\u00e9\uD83D\uDE00""#,
        "[]", "{}", "[[],{}]", #"{"z":1,"a":[true,null,{"k":"v"}],"m":-9223372036854775808}"#,
        #"{"email":"ayu@example.com","data":{"dateOfBirth":"1994-05-17","height":177.5,"weight":78,"isMarried":true}}"#,
        " [ 1 , 2 ] ", "\"é€😀\"",
    ])
    func roundTrip(_ text: String) throws {
        let value = try JSONParser.parse(text)
        let bytes = value.serialized()
        let reparsed = try JSONParser.parse(bytes)
        #expect(reparsed == value)
        // Serialization is a fixed point: same bytes the second time.
        #expect(reparsed.serialized() == bytes)
    }

    @Test func compactOutputKeepsLiteralsAndOrder() throws {
        let value = try JSONParser.parse(#" { "b" : 1.50 , "a" : [ 1E400 , -0 ] , "c" : "\u0041\/" } "#)
        #expect(value.serializedString() == #"{"b":1.50,"a":[1E400,-0],"c":"A/"}"#)
    }

    @Test func integerAndDoubleKindsSurvive() throws {
        let value: JSONValue = ["weight": 78, "height": 177.0]
        let reparsed = try JSONParser.parse(value.serialized())
        #expect(reparsed["weight"]?.numberValue?.isInteger == true)
        #expect(reparsed["height"]?.numberValue?.isInteger == false)
        #expect(value.serializedString() == #"{"weight":78,"height":177.0}"#)
    }

    @Test func minimalEscaping() {
        let value: JSONValue = .string("a\"\\\n\u{01}é/")
        #expect(value.serializedString() == #""a\"\\\n\u0001é/""#)
    }

    @Test func mebibyteRoundTrip() throws {
        var object = JSONObject()
        for index in 0..<5000 {
            object["key\(index)"] = ["n": .number(JSONNumber(index)), "s": .string(String(repeating: "é", count: index % 50)), "d": 0.5]
        }
        let value = JSONValue.object(object)
        let bytes = value.serialized()
        let reparsed = try JSONParser.parse(bytes)
        #expect(reparsed == value)
        #expect(reparsed.objectValue?.keys == object.keys)
    }
}
