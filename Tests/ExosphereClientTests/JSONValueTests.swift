@testable import ExosphereClient
import Foundation
import TestSupport
import Testing

/// The client's own JSON: number literals keep their kind both ways.
struct JSONValueTests {
    func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Data(text.utf8)) }
    func write(_ value: JSONValue) throws -> String { String(decoding: try value.serialized(), as: UTF8.self) }

    @Test func numbersKeepTheirKind() throws {
        #expect(try parse("78") == .integer(78))
        #expect(try parse("-0") == .integer(0))
        #expect(try parse("78.0") == .double(78))
        #expect(try parse("177.5") == .double(177.5))
        #expect(try parse("1e2") == .double(100))
        #expect(try parse("9223372036854775807") == .integer(.max))
        #expect(try parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        for invalid in ["01", "1.", ".5", "-", "1e", "+1", "NaN", "1e999"] {
            #expect(throws: JSONValue.ParseError.self, "\(invalid)") { try parse(invalid) }
        }
    }

    @Test func doublesAreWrittenAsDoubles() throws {
        #expect(try write(.double(180)) == "180.0")
        #expect(try write(.double(177.5)) == "177.5")
        #expect(try write(.double(-0.25)) == "-0.25")
        #expect(try write(.double(1e300)) == "1e+300")
        #expect(try write(.double(.leastNonzeroMagnitude)) == "5e-324")
        #expect(try write(.integer(180)) == "180")
        #expect(throws: JSONValue.WriteError.self) { try write(.double(.nan)) }
        #expect(throws: JSONValue.WriteError.self) { try write(.double(-.infinity)) }
        for value in [0.1, 1.0 / 3, 1e16, 123_456_789.123_456_79, -2.5e-10] {
            #expect(try parse(try write(.double(value))) == .double(value), "\(value) round-trips")
        }
    }

    @Test func stringsEscapeAndUnescape() throws {
        let text = "quote \" backslash \\ newline \n tab \t nul \u{0} bell \u{7} é 😀 \u{2028}"
        let written = try write(.string(text))
        #expect(written.contains(#"\u0000"#) && written.contains(#"\u0007"#) && written.contains(#"\""#))
        #expect(try parse(written) == .string(text))
        #expect(try parse(#""\u00e9\ud83d\ude00\/""#) == .string("é😀/"))
        for invalid in [#""\ud83d""#, #""\x""#, "\"a\nb\"", #""unterminated"#] {
            #expect(throws: JSONValue.ParseError.self, "\(invalid)") { try parse(invalid) }
        }
        #expect(throws: JSONValue.ParseError.self) { try JSONValue.parse(Data([0x22, 0xFF, 0x22])) }
    }

    @Test func documentsNestAndEndCleanly() throws {
        let value = try parse(#" {"a": [1, 2.5, true, false, null, {"b": "c"}], "d": {}} "#)
        #expect(value["a"]?.arrayValue?.count == 6)
        #expect(value["a"]?.arrayValue?[5]["b"] == .string("c"))
        #expect(value["d"] == .object([:]))
        #expect(try write(value) == #"{"a":[1,2.5,true,false,null,{"b":"c"}],"d":{}}"#)
        for invalid in ["", "{", "[1,]", #"{"a" 1}"#, "{} {}", "tru", #"{"a":1,}"#] {
            #expect(throws: JSONValue.ParseError.self, "\(invalid)") { try parse(invalid) }
        }
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONValue.ParseError.self) { try parse(deep) }
    }
}

/// RFC 3339 timestamps.
@Suite(.testThreads)
struct TimestampTests {
    @Test func readsEveryRFC3339Form() throws {
        let utc = try #require(Timestamp.parse("2026-11-29T17:39:01.123Z"))
        #expect(Timestamp.format(utc) == "2026-11-29T17:39:01.123Z")
        #expect(Timestamp.parse("2026-11-29T19:39:01.123+02:00") == utc)
        #expect(Timestamp.parse("2026-11-29T12:09:01.123-05:30") == utc)
        #expect(Timestamp.parse("2026-11-29t17:39:01.123z") == utc)
        #expect(Timestamp.parse("2026-11-29T17:39:01Z")?.timeIntervalSince1970 == 1_795_973_941)
        for invalid in [
            "2026-11-29", "2026-11-29T17:39:01", "2026-11-29T17:39:01.Z", "2026-02-30T00:00:00Z",
            "2026-11-29T24:00:00Z", "2026-11-29T17:39:01+0200", "2026-11-29 17:39:01Z",
        ] {
            #expect(Timestamp.parse(invalid) == nil, "\(invalid)")
        }
    }

    @Test func writesUTCWithMilliseconds() {
        #expect(Timestamp.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: -0.001)) == "1969-12-31T23:59:59.999Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: 951_782_400.05)) == "2000-02-29T00:00:00.050Z")
    }
}

/// Problem documents become `ExosphereError`s; retries are decided from them.
@Suite(.testThreads)
struct ExosphereErrorTests {
    @Test func aProblemDocumentGivesCodeDetailAndFields() {
        let body = Data(
            #"""
            {"type": "about:blank", "title": "Unprocessable Content", "status": 422, "code": "invalid_type",
             "detail": "data.height must be a double",
             "errors": [{"field": "data.height", "code": "invalid_type", "detail": "expected double, got string"}]}
            """#.utf8)
        let error = ExosphereError(status: 422, body: body, retryAfter: nil)
        #expect(error.status == 422)
        #expect(error.code == .invalidType)
        #expect(error.detail == "data.height must be a double")
        #expect(error.fieldErrors == [ExosphereError.FieldError(field: "data.height", code: "invalid_type", detail: "expected double, got string")])
        #expect(error.description == "ExosphereError(422, invalid_type)", "no detail: it may echo what the user typed")
        #expect(error.debugDescription.contains("data.height invalid_type"))
    }

    @Test func aBodyThatIsNotAProblemStillGivesAnError() {
        let error = ExosphereError(status: 502, body: Data("<html>Bad Gateway</html>".utf8), retryAfter: 5)
        #expect(error.code == "http_502")
        #expect(error.retryAfter == 5)
        #expect(!error.detail.isEmpty)
    }

    @Test func writesWhoseFateIsUnknownAreNotRepeated() {
        let unavailable = ExosphereError(status: 503, code: .databaseUnavailable, detail: "")
        let overloaded = ExosphereError(status: 503, code: .overloaded, detail: "")
        let refused = ExosphereError(code: .networkError, detail: "", underlyingError: URLError(.cannotConnectToHost))
        let lost = ExosphereError(code: .networkError, detail: "", underlyingError: URLError(.networkConnectionLost))
        let timedOut = ExosphereError(code: .networkError, detail: "", underlyingError: URLError(.timedOut))
        let get = APIRequest("GET", "/users/me")
        let post = APIRequest("POST", "/users/me/images")
        let patch = APIRequest("PATCH", "/users/me")
        let deleteAccount = APIRequest("DELETE", "/users/me", isIdempotent: false)
        #expect(get.mayRetry(after: unavailable) && get.mayRetry(after: lost) && get.mayRetry(after: refused))
        #expect(!post.mayRetry(after: unavailable) && !patch.mayRetry(after: unavailable))
        #expect(post.mayRetry(after: overloaded) && post.mayRetry(after: refused))
        #expect(!post.mayRetry(after: lost) && !deleteAccount.mayRetry(after: lost))
        #expect(!get.mayRetry(after: timedOut))
    }

    @Test func idsAreEscapedInPaths() {
        #expect(APIRequest.segment("5f0c-ab_9.~") == "5f0c-ab_9.~")
        #expect(APIRequest.segment("../me") == "..%2Fme")
        #expect(APIRequest.segment("a b?c") == "a%20b%3Fc")
    }
}

/// The client's state: a refusal of an old token does not end a newer session.
@Suite(.testThreads)
struct ClientStateTests {
    @Test func aRefusedOldTokenLeavesANewerSessionAlone() throws {
        let store = InMemorySessionStore()
        try store.save(
            Data(
                #"""
                {"version": 1, "accessToken": "new", "user": {"id": "u", "email": "ayu@example.com", "firstname": "",
                 "lastname": "", "emailVerified": false, "createdAt": "2026-11-29T17:39:01.123Z",
                 "updatedAt": "2026-11-29T17:39:01.123Z", "data": {}}}
                """#.utf8))
        let client = Exosphere(
            baseURL: URL(string: "http://127.0.0.1:9")!, sessionStore: store,
            configuration: {
                var configuration = Exosphere.Configuration(); configuration.imageCacheEnabled = false; return configuration
            }())
        client.end(announcing: .sessionExpired, ifToken: "old")
        #expect(client.isSignedIn)
        #expect(try store.load() != nil)
        client.end(announcing: .sessionExpired, ifToken: "new")
        #expect(!client.isSignedIn)
        #expect(try store.load() == nil)
    }

    @Test func theStoredFormRoundTrips() throws {
        let user = try User(
            json: try JSONValue.parse(
                Data(
                    #"""
                    {"id": "u", "email": "ayu@example.com", "firstname": "Ayu", "lastname": "Lestari", "emailVerified": true,
                     "createdAt": "2026-11-29T17:39:01.123Z", "updatedAt": "2026-11-29T17:40:12.456Z",
                     "data": {"dateOfBirth": "1994-05-17", "height": 177.5, "weight": 78, "isMarried": true, "whole": 2.0}}
                    """#.utf8)), etag: "\"tag\"")
        let session = Exosphere.SignedIn(accessToken: "token", expiresAt: Date(timeIntervalSince1970: 1_795_973_941.5), user: user)
        let decoded = try Exosphere.decodeSession(Exosphere.encodeSession(session))
        #expect(decoded.accessToken == "token")
        #expect(decoded.expiresAt == session.expiresAt)
        #expect(decoded.user == user)
        #expect(decoded.user["whole"] == .double(2))
        #expect(throws: ExosphereError.self) { try Exosphere.decodeSession(Data(#"{"version": 2}"#.utf8)) }
    }
}
