import TestSupport
import Testing
@testable import JSON

@Suite(.testThreads) struct JSONObjectTests {
    @Test func keepsInsertionOrder() {
        var object = JSONObject()
        for key in ["z", "a", "m", "b"] { object[key] = .string(key) }
        #expect(object.keys == ["z", "a", "m", "b"])
        #expect(object.map(\.key) == ["z", "a", "m", "b"])
        #expect(object.values == ["z", "a", "m", "b"])
    }

    @Test func replacingKeepsPosition() {
        var object: JSONObject = ["a": 1, "b": 2, "c": 3]
        let old = object.updateValue(20, forKey: "b")
        #expect(old == 2)
        #expect(object.keys == ["a", "b", "c"])
        #expect(object["b"] == 20)
        object["a"] = "x"
        #expect(object.keys == ["a", "b", "c"])
    }

    @Test func removal() {
        var object: JSONObject = ["a": 1, "b": 2, "c": 3]
        #expect(object.removeValue(forKey: "b") == 2)
        #expect(object.removeValue(forKey: "b") == nil)
        #expect(object.keys == ["a", "c"])
        object["a"] = nil
        #expect(object.keys == ["c"])
        #expect(object.count == 1)
        #expect(!object.isEmpty)
    }

    @Test func largeObjectsUseTheIndexConsistently() {
        var object = JSONObject()
        for index in 0..<100 { object["k\(index)"] = .number(JSONNumber(index)) }
        #expect(object.count == 100)
        #expect(object["k57"] == 57)
        #expect(object["missing"] == nil)
        for index in stride(from: 0, to: 100, by: 3) { object.removeValue(forKey: "k\(index)") }
        #expect(object.count == 66)
        for index in 0..<100 {
            #expect(object["k\(index)"] == (index % 3 == 0 ? nil : .number(JSONNumber(index))))
        }
        #expect(object.keys.first == "k1")
        object["k0"] = 0
        #expect(object.keys.last == "k0")
        #expect(object.contains(key: "k0"))
    }

    @Test func removingDownToSmallKeepsWorking() {
        var object = JSONObject()
        for index in 0..<12 { object["k\(index)"] = .number(JSONNumber(index)) }
        for index in 0..<11 { object["k\(index)"] = nil }
        #expect(object.keys == ["k11"])
        #expect(object["k11"] == 11)
        object["new"] = true
        #expect(object.keys == ["k11", "new"])
    }

    @Test func keysCompareByExactScalars() {
        var object = JSONObject()
        object["\u{E9}"] = 1
        object["e\u{301}"] = 2
        #expect(object.count == 2)
        #expect(object["\u{E9}"] == 1)
        #expect(object["e\u{301}"] == 2)
    }

    @Test func equalityIgnoresOrder() {
        let left: JSONObject = ["a": 1, "b": [true]]
        let right: JSONObject = ["b": [true], "a": 1]
        #expect(left == right)
        #expect(left != ["a": 1])
        #expect(left != ["a": 1, "b": [false]])
        #expect(left != ["a": 1, "c": [true]])
    }

    @Test func parsedOrderIsPreserved() throws {
        let object = try #require(try JSONParser.parse(#"{"zeta":1,"alpha":2,"mid":3,"beta":4}"#).objectValue)
        #expect(object.keys == ["zeta", "alpha", "mid", "beta"])
        #expect(object[0].key == "zeta")
        #expect(object[3].value == 4)
    }
}
