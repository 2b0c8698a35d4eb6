import TestSupport
import Testing
@testable import JSON

@Suite(.testThreads) struct JSONWriterTests {
    private func text(_ writer: JSONWriter) -> String {
        String(decoding: writer.bytes, as: UTF8.self)
    }

    @Test func problemDocument() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("type"); writer.string("about:blank")
        writer.key("title"); writer.string("Unprocessable Content")
        writer.key("status"); writer.int(422)
        writer.key("code"); writer.string("invalid_type")
        writer.key("errors")
        writer.beginArray()
        writer.beginObject()
        writer.key("field"); writer.string("data.height")
        writer.endObject()
        writer.beginObject()
        writer.endObject()
        writer.endArray()
        writer.endObject()
        #expect(
            text(writer)
                == #"{"type":"about:blank","title":"Unprocessable Content","status":422,"code":"invalid_type","errors":[{"field":"data.height"},{}]}"#
        )
    }

    @Test func scalarsAndCommas() {
        var writer = JSONWriter()
        writer.beginArray()
        writer.null()
        writer.bool(true)
        writer.bool(false)
        writer.int(0)
        writer.int(-42)
        writer.int(Int64.min)
        writer.int(Int64.max)
        writer.double(2)
        writer.double(0.1)
        writer.double(-1e300)
        writer.double(.nan)
        writer.double(.infinity)
        writer.number(JSONNumber(7))
        writer.beginArray()
        writer.endArray()
        writer.string("")
        writer.endArray()
        #expect(text(writer) == #"[null,true,false,0,-42,-9223372036854775808,9223372036854775807,2.0,0.1,-1e+300,null,null,7,[],""]"#)
    }

    @Test func emptyContainers() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a"); writer.beginArray(); writer.endArray()
        writer.key("b"); writer.beginObject(); writer.endObject()
        writer.endObject()
        #expect(text(writer) == #"{"a":[],"b":{}}"#)
    }

    @Test func stringEscaping() {
        var writer = JSONWriter()
        writer.string("q\"b\\s/\u{08}\u{0C}\n\r\t\u{00}\u{01}\u{1F}\u{7F} é€😀\u{2028}")
        #expect(text(writer) == "\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0000\\u0001\\u001f\u{7F} é€😀\u{2028}\"")
    }

    @Test func keysAreEscapedToo() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("a\"b\n")
        writer.int(1)
        writer.endObject()
        #expect(text(writer) == #"{"a\"b\n":1}"#)
    }

    @Test func appendsToExistingBytes() {
        var writer = JSONWriter(appendingTo: Array("HTTP body: ".utf8))
        writer.beginArray()
        writer.int(1)
        writer.endArray()
        #expect(text(writer) == "HTTP body: [1]")
    }

    @Test func writesWholeValues() {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("user")
        writer.value(["id": "5f0c", "data": ["height": 177.5, "weight": 78, "isMarried": true, "x": nil]])
        writer.key("n")
        writer.int(1)
        writer.endObject()
        #expect(text(writer) == #"{"user":{"id":"5f0c","data":{"height":177.5,"weight":78,"isMarried":true,"x":null}},"n":1}"#)
    }

    @Test func writerOutputParses() throws {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("s"); writer.string("\u{00}\u{1F}\"\\")
        writer.key("d"); writer.double(1e-7)
        writer.endObject()
        let value = try JSONParser.parse(writer.bytes)
        #expect(value["s"] == "\u{00}\u{1F}\"\\")
        #expect(value["d"]?.doubleValue == 1e-7)
        #expect(value["d"]?.numberValue?.isInteger == false)
    }
}
