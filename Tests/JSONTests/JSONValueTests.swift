import TestSupport
import Testing
@testable import JSON

@Suite(.testThreads) struct JSONValueTests {
    @Test func literals() {
        let value: JSONValue = ["a": 1, "b": [true, nil], "c": 2.5, "d": "x", "e": [:], "f": []]
        guard case .object(let object) = value else {
            Issue.record("not an object")
            return
        }
        #expect(object.keys == ["a", "b", "c", "d", "e", "f"])
        #expect(object["a"] == .number(JSONNumber(1)))
        #expect(object["b"] == .array([.bool(true), .null]))
        #expect(object["c"] == .number(JSONNumber(2.5)!))
        #expect(object["d"] == .string("x"))
        #expect(object["e"] == .object(JSONObject()))
        #expect(object["f"] == .array([]))
    }

    @Test func floatLiteralStaysADouble() {
        let value: JSONValue = 2.0
        #expect(value.numberValue?.isInteger == false)
        #expect(value.numberValue?.text == "2.0")
        let integer: JSONValue = 2
        #expect(integer.numberValue?.isInteger == true)
        #expect(value != integer)
    }

    @Test func accessors() {
        let value: JSONValue = ["s": "x", "b": false, "n": 3, "d": 1.5, "a": [1, 2], "o": ["k": nil], "z": nil]
        #expect(value["s"]?.stringValue == "x")
        #expect(value["b"]?.boolValue == false)
        #expect(value["n"]?.int64Value == 3)
        #expect(value["n"]?.doubleValue == 3)
        #expect(value["d"]?.doubleValue == 1.5)
        #expect(value["d"]?.int64Value == nil)
        #expect(value["a"]?.arrayValue?.count == 2)
        #expect(value["a"]?[1] == 2)
        #expect(value["a"]?[2] == nil)
        #expect(value["a"]?[-1] == nil)
        #expect(value["o"]?.objectValue?.keys == ["k"])
        #expect(value["o"]?["k"]?.isNull == true)
        #expect(value["z"]?.isNull == true)
        #expect(value["missing"] == nil)
        #expect(value["s"]?.boolValue == nil)
        #expect(value["s"]?.int64Value == nil)
        #expect(value["n"]?.stringValue == nil)
        #expect(value["s"]?["x"] == nil)
        #expect(value[0] == nil)
        #expect(JSONValue.string("1").int64Value == nil)
        #expect(!JSONValue.bool(false).isNull)
    }

    @Test func equality() throws {
        #expect(JSONValue.null == nil)
        #expect(JSONValue.null != false)
        #expect(JSONValue.string("1") != 1)
        #expect(try JSONParser.parse("[1, 2.0, 1e2]") == [1, 2.0, 100.0])
        #expect(try JSONParser.parse("[1, 2.0]") != [1, 2])
        #expect(try JSONParser.parse(#"{"a":1,"b":2}"#) == JSONParser.parse(#"{"b":2,"a":1}"#))
        #expect(JSONValue.string("\u{E9}") != .string("e\u{301}"))
        #expect([1, 2] as JSONValue != [2, 1])
    }

    @Test func description() {
        let value: JSONValue = ["a": [1, "x"]]
        #expect(value.description == #"{"a":[1,"x"]}"#)
        #expect("\(value)" == #"{"a":[1,"x"]}"#)
    }
}
