import TestSupport
import API
import JSON
import Synchronization
import Testing

/// Custom profile fields: type inference from the first write, type checks, names and limits.
/// Field types are deployment-wide, so every test uses its own field names.
@Suite(.testThreads, .liveServer("fields"), .serialized)
struct CustomFieldsAPITests {
    let server: TestServer
    let account: TestServer.Account

    init() throws {
        server = try #require(TestServer.current)
        account = try server.register()
    }

    func patch(_ data: String, token: String? = nil) throws -> Reply {
        try server.call("PATCH", "/users/me", token: token ?? account.token, json: #"{"data": \#(data)}"#)
    }

    func schema() throws -> JSONValue {
        try server.call("GET", "/users/schema", token: account.token).json["fields"] ?? .null
    }

    @Test func theFirstWriteFixesTheTypeForEveryone() throws {
        let first = try patch(#"{"tHeight": 177.5}"#)
        #expect(first.status == 200)
        #expect(try schema()["tHeight"] == .string("double"))

        let other = try server.register()
        let wrong = try patch(#"{"tHeight": "tall"}"#, token: other.token)
        #expect(wrong.status == 422)
        #expect(wrong.code == "invalid_type")
        #expect(wrong.firstError.field == "data.tHeight")
        #expect(wrong.firstError.code == "invalid_type")
        let detail = try #require(wrong.firstError.detail)
        #expect(detail.contains("double") && detail.contains("string"), "\(detail)")
        #expect(wrong.json["detail"]?.stringValue?.contains("data.tHeight") == true)
        #expect(wrong.json["detail"]?.stringValue == "data.tHeight must be a double")
        #expect(try server.me(other.token).json["data"] == .object(JSONObject()))
        // Registration is held to the same types.
        let register = try server.call(
            "POST", "/users",
            json: """
                {"email": "\(server.uniqueEmail())", "password": "\(server.uniquePassword())", "data": {"tHeight": true}}
                """)
        #expect(register.status == 422)
        #expect(register.code == "invalid_type")
        #expect(register.firstError.field == "data.tHeight")
    }

    @Test func schemaListsTypesAndNeedsASession() throws {
        #expect(try patch(#"{"sS": "x", "sI": 1, "sD": 1.5, "sB": false, "sDate": "2024-02-29", "sDT": "2024-02-29T12:00:00Z"}"#).status == 200)
        let reply = try server.call("GET", "/users/schema", token: account.token)
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "application/json")
        #expect(keys(reply.json) == ["fields"])
        let fields = reply.json["fields"]
        #expect(fields?["sS"] == "string")
        #expect(fields?["sI"] == "integer")
        #expect(fields?["sD"] == "double")
        #expect(fields?["sB"] == "boolean")
        #expect(fields?["sDate"] == "date")
        #expect(fields?["sDT"] == "datetime")
        #expect(try server.call("GET", "/users/schema").status == 401)
    }

    @Test func integersAreAcceptedForDoublesAndComeBackAsDoubles() throws {
        #expect(try patch(#"{"dHeight": 177.5}"#).status == 200)
        let reply = try patch(#"{"dHeight": 180}"#)
        #expect(reply.status == 200)
        let number = try #require(reply.json["data"]?["dHeight"]?.numberValue)
        #expect(!number.isInteger)
        #expect(number.text == "180.0")
        let stored = try #require(try server.me(account.token).json["data"]?["dHeight"]?.numberValue)
        #expect(stored.text == "180.0")
        #expect(try patch(#"{"dHeight": -0.25e1}"#).json["data"]?["dHeight"]?.numberValue?.doubleValue == -2.5)
    }

    @Test func doublesKeepTheirTypeWhateverTheirMagnitude() throws {
        // PostgreSQL's jsonb prints numbers without exponents: 1e16 must not come back as an integer.
        for (name, literal, value) in [
            ("mBig", "1e16", 1e16), ("mHuge", "1e300", 1e300), ("mTiny", "1e-300", 1e-300),
            ("mNeg", "-1.5e20", -1.5e20), ("mMax", "1.7976931348623157e308", Double.greatestFiniteMagnitude),
        ] {
            let reply = try patch(#"{"\#(name)": \#(literal)}"#)
            #expect(reply.status == 200, "\(literal): \(reply.text)")
            for json in [reply.json, try server.me(account.token).json] {
                let number = json["data"]?[name]?.numberValue
                #expect(number?.isInteger == false, "\(literal) came back as \(number?.text ?? "nothing")")
                #expect(number?.doubleValue == value, "\(literal)")
            }
            #expect(try schema()[name] == "double")
        }
        // A double field given an integer literal that is large.
        #expect(try patch(#"{"mBig": 20000000000000000}"#).json["data"]?["mBig"]?.numberValue?.isInteger == false)
        #expect(try server.me(account.token).status == 200)
        // The same through PUT (whose single UPDATE once stored 3e16 as the integer 30000000000000000).
        let other = try server.register()
        let put = try server.call("PUT", "/users/me", token: other.token, json: #"{"email": "\#(other.email)", "data": {"mBig": 3e16}}"#)
        #expect(put.json["data"]?["mBig"]?.numberValue?.isInteger == false, "\(put.text)")
        #expect(try server.me(other.token).json["data"]?["mBig"]?.numberValue?.isInteger == false)
    }

    @Test func fractionsAndNumericStringsAreNotIntegers() throws {
        #expect(try patch(#"{"iWeight": 78}"#).status == 200)
        for literal in ["78.5", "78.0", "7.8e1", #""78""#, "true", #""""#] {
            let reply = try patch(#"{"iWeight": \#(literal)}"#)
            #expect(reply.status == 422, "\(literal)")
            #expect(reply.code == "invalid_type", "\(literal)")
            #expect(reply.firstError.field == "data.iWeight")
        }
        #expect(try patch(#"{"iWeight": -9223372036854775808}"#).status == 200)
        let overflow = try patch(#"{"iWeight": 9223372036854775808}"#)
        #expect(overflow.status == 422)
        #expect(overflow.firstError.field == "data.iWeight")
        #expect(try patch(#"{"dNum": 1.5}"#).status == 200)
        let numericString = try patch(#"{"dNum": "1.5"}"#)
        #expect(numericString.status == 422)
        #expect(numericString.code == "invalid_type")
        #expect(try server.me(account.token).json["data"]?["iWeight"]?.numberValue?.text == "-9223372036854775808")
    }

    @Test func twoPointZeroIsADoubleAndTwoIsAnInteger() throws {
        #expect(try patch(#"{"pDouble": 2.0, "pInteger": 2, "pString": "2.0", "pExp": 2e0}"#).status == 200)
        let fields = try schema()
        #expect(fields["pDouble"] == "double")
        #expect(fields["pInteger"] == "integer")
        #expect(fields["pString"] == "string")
        #expect(fields["pExp"] == "double")
        let data = try server.me(account.token).json["data"]
        #expect(data?["pDouble"]?.numberValue?.text == "2.0")
        #expect(data?["pInteger"]?.numberValue?.text == "2")
        #expect(data?["pString"] == "2.0")
        #expect(data?["pExp"]?.numberValue?.isInteger == false)
        #expect(try patch(#"{"pInteger": 2.0}"#).status == 422)
        #expect(try patch(#"{"pString": 2}"#).status == 422)
    }

    @Test func datesDatetimesAndStringsAreInferred() throws {
        #expect(
            try patch(
                """
                {"fDate": "1994-05-17", "fLeap": "2024-02-29", "fNotLeap": "2023-02-29", "fBadDay": "1994-13-01",
                 "fDT": "2026-11-29T17:39:01.123Z", "fDTOffset": "2026-11-29T17:39:01+07:00", "fSpace": "2026-11-29 17:39:01",
                 "fShort": "1994-5-17", "fText": "hello"}
                """
            ).status == 200)
        let fields = try schema()
        #expect(fields["fDate"] == "date")
        #expect(fields["fLeap"] == "date")
        #expect(fields["fNotLeap"] == "string")
        #expect(fields["fBadDay"] == "string")
        #expect(fields["fDT"] == "datetime")
        #expect(fields["fDTOffset"] == "datetime")
        #expect(fields["fSpace"] == "string")
        #expect(fields["fShort"] == "string")
        #expect(fields["fText"] == "string")
        // A date stays exactly as written (no time zone shift).
        #expect(try server.me(account.token).json["data"]?["fDate"] == "1994-05-17")
        for (field, value) in [
            ("fDate", #""2026-11-29T17:39:01Z""#), ("fDate", #""1994-02-30""#), ("fDate", #""yesterday""#),
            ("fDT", #""1994-05-17""#), ("fDT", "1700000000"), ("fText", "5"),
        ] {
            let reply = try patch(#"{"\#(field)": \#(value)}"#)
            #expect(reply.status == 422, "\(field) = \(value)")
            #expect(reply.code == "invalid_type")
            #expect(reply.firstError.field == "data.\(field)")
        }
        // A string field takes any string, also one that looks like a date.
        #expect(try patch(#"{"fText": "1994-05-17"}"#).status == 200)
        #expect(try patch(#"{"fDT": "2027-01-01T00:00:00.5-03:30"}"#).status == 200)
    }

    @Test func nullRemovesAField() throws {
        #expect(try patch(#"{"nKeep": 1, "nDrop": "x"}"#).status == 200)
        let reply = try patch(#"{"nDrop": null}"#)
        #expect(reply.status == 200)
        #expect(reply.json["data"]?["nDrop"] == nil)
        #expect(reply.json["data"]?["nKeep"] == 1)
        // The type stays fixed after removal.
        #expect(try patch(#"{"nDrop": 5}"#).status == 422)
    }

    @Test func fieldNamesAreChecked() throws {
        let sixtyFour = "n" + String(repeating: "a", count: 63)
        #expect(try patch(#"{"\#(sixtyFour)": 1, "A_1": 1, "z9": 1}"#).status == 200)
        for name in ["1abc", "_x", "a-b", "a b", "a.b", "é", "", "n" + String(repeating: "a", count: 64), "$where"] {
            let reply = try patch(#"{\#(jsonString(name)): 1}"#)
            #expect(reply.status == 422, "\(name)")
            #expect(reply.firstError.field == "data.\(name)", "\(name)")
        }
    }

    @Test func atMost64Fields() throws {
        let user = try server.register()
        let sixtyFour = (1...64).map { #""cap\#($0)": \#($0)"# }.joined(separator: ", ")
        #expect(try patch("{\(sixtyFour)}", token: user.token).status == 200)
        let more = try patch(#"{"cap65": 65}"#, token: user.token)
        #expect(more.status == 422)
        #expect(more.firstError.field == "data")
        // Replacing one field at the limit is fine; removing one makes room.
        #expect(try patch(#"{"cap1": 100}"#, token: user.token).status == 200)
        #expect(try patch(#"{"cap1": null, "cap65": 65}"#, token: user.token).status == 200)
        let sixtyFive = (1...65).map { #""cap\#($0)": \#($0)"# }.joined(separator: ", ")
        let register = try server.call(
            "POST", "/users",
            json: """
                {"email": "\(server.uniqueEmail())", "password": "\(server.uniquePassword())", "data": {\(sixtyFive)}}
                """)
        #expect(register.status == 422)
        let put = try server.call("PUT", "/users/me", token: user.token, json: #"{"email": "\#(user.email)", "data": {\#(sixtyFive)}}"#)
        #expect(put.status == 422)
        #expect(try server.me(user.token).json["data"]?.objectValue?.count == 64)
    }

    @Test func stringsAndDocumentsAreBounded() throws {
        let user = try server.register()
        let max = String(repeating: "é", count: 2048)  // 4096 bytes
        #expect(try patch(#"{"bText": "\#(max)"}"#, token: user.token).status == 200)
        let over = try patch(#"{"bText": "\#(max)x"}"#, token: user.token)
        #expect(over.status == 422)
        #expect(over.firstError.field == "data.bText")
        // Sixteen 4 KiB strings are over the 64 KiB document.
        let big = String(repeating: "d", count: 4096)
        let fields = (1...16).map { #""doc\#($0)": "\#(big)""# }.joined(separator: ", ")
        let document = try patch("{\(fields)}", token: user.token)
        #expect(document.status == 422)
        #expect(try server.me(user.token).json["data"]?["doc1"] == nil)
    }

    @Test func arraysObjectsAndNULAreRefused() throws {
        for (name, value) in [("aArr", "[1, 2]"), ("aObj", #"{"x": 1}"#), ("aEmptyArr", "[]"), ("aEmptyObj", "{}")] {
            let reply = try patch(#"{"\#(name)": \#(value)}"#)
            #expect(reply.status == 422, "\(value)")
            #expect(reply.code == "invalid_type")
            #expect(reply.firstError.field == "data.\(name)")
        }
        let nul = try patch(#"{"aNul": "x\u0000y"}"#)
        #expect(nul.status == 422)
        #expect(nul.firstError.field == "data.aNul")
    }

    @Test func aRefusedWriteFixesNoType() throws {
        // One field new and fine, another invalid: the whole write is refused, and so is the type.
        let reply = try patch(#"{"rFresh": 5, "rBad": [1]}"#)
        #expect(reply.status == 422)
        #expect(try schema()["rFresh"] == nil)
        let string = try patch(#"{"rFresh": "now a string"}"#)
        #expect(string.status == 200, "\(string.text)")
        #expect(try schema()["rFresh"] == "string")

        // A string over 4096 bytes does not fix a type either.
        let long = String(repeating: "s", count: 4097)
        #expect(try patch(#"{"rLong": "\#(long)"}"#).status == 422)
        #expect(try patch(#"{"rLong": 3}"#).status == 200)
        #expect(try schema()["rLong"] == "integer")

        // Nor does a registration refused for its email.
        _ = try server.register(email: "taken-\(account.email)")
        let taken = try server.call(
            "POST", "/users",
            json: """
                {"email": "taken-\(account.email)", "password": "\(server.uniquePassword())", "data": {"rReg": "text"}}
                """)
        #expect(taken.status == 409)
        #expect(try schema()["rReg"] == nil)
        #expect(try patch(#"{"rReg": 1.5}"#).status == 200)
    }

    @Test func concurrentFirstWritesAgreeOnOneType() throws {
        let server = self.server
        let users = [account, try server.register()]
        for round in 0..<5 {
            let name = "race\(round)"
            let statuses = Mutex<[Int]>([0, 0])
            let barrier = Barrier(2)
            try onThreads(2) { index in
                try barrier.arrive()
                let value = index == 0 ? "1" : #""one""#
                let reply = try? server.call("PATCH", "/users/me", token: users[index].token, json: #"{"data": {"\#(name)": \#(value)}}"#)
                statuses.withLock { $0[index] = reply?.status ?? -1 }
            }
            let results = statuses.withLock { $0 }
            #expect(results.sorted() == [200, 422], "round \(round): \(results)")
            let type = try schema()[name]
            #expect(type == (results[0] == 200 ? "integer" : "string"), "round \(round): \(results) \(String(describing: type))")
        }
    }

    @Test func errorsNameEveryBadField() throws {
        #expect(try patch(#"{"eA": 1, "eB": "x"}"#).status == 200)
        let reply = try patch(#"{"eA": "no", "eB": 2}"#)
        #expect(reply.status == 422)
        let errors = reply.json["errors"]?.arrayValue ?? []
        #expect(Set(errors.compactMap { $0["field"]?.stringValue }) == ["data.eA", "data.eB"])
        #expect(errors.allSatisfy { $0["code"] == "invalid_type" })
    }
}
