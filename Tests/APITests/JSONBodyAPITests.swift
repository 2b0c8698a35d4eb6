@testable import API
import JSON
import TestSupport
import Testing

/// Hostile and malformed request bodies on every JSON endpoint of the accounts API.
@Suite(.testThreads, .liveServer("bodies"), .serialized)
struct JSONBodyAPITests {
    let server: TestServer
    let account: TestServer.Account

    init() throws {
        server = try #require(TestServer.current)
        account = try server.register()
    }

    /// The JSON endpoints, with the token they need.
    var endpoints: [(String, String, String?)] {
        [
            ("POST", "/users", nil), ("POST", "/users/signin", nil), ("PUT", "/users/me", account.token),
            ("PATCH", "/users/me", account.token), ("POST", "/users/me/password", account.token),
            ("DELETE", "/users/me", account.token), ("POST", "/users/signout", account.token),
        ]
    }

    func send(_ endpoint: (String, String, String?), _ body: [UInt8], contentType: String = "application/json") throws -> Reply {
        var headers = [("Content-Type", contentType)]
        if let token = endpoint.2 { headers.append(("Authorization", "Bearer \(token)")) }
        return try server.send(endpoint.0, endpoint.1, headers: headers, body: body)
    }

    @Test func malformedJSONIs400() throws {
        for body in [
            "{", "{\"email\": }", "{'email': 'x'}", "{\"a\": 1,}", "nul", "{\"a\": 01}", "{} {}", "{\"a\": \"\\x\"}",
            "{\"a\": 1, \"a\": 2}", "\u{FEFF}{}", " ",
        ] {
            for endpoint in endpoints {
                let reply = try send(endpoint, Array(body.utf8))
                #expect(reply.status == 400, "\(endpoint.0) \(endpoint.1) \(body)")
                #expect(reply.header("Content-Type") == "application/problem+json")
                #expect(reply.code != nil)
            }
        }
    }

    @Test func nonUTF8Is400() throws {
        let bodies: [[UInt8]] = [
            Array(#"{"email": ""#.utf8) + [0xFF, 0xFE] + Array(#"", "password": "x"}"#.utf8),
            Array(#"{"firstname": ""#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8),  // bad continuation
            Array(#"{"firstname": ""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),  // encoded surrogate
            Array(#"{"firstname": ""#.utf8) + [0xC0, 0xAF] + Array(#""}"#.utf8),  // overlong
            [0xFF] + Array("{}".utf8),
        ]
        for body in bodies {
            for endpoint in endpoints {
                let reply = try send(endpoint, body)
                #expect(reply.status == 400, "\(endpoint.0) \(endpoint.1) \(body.prefix(20))")
            }
        }
    }

    @Test func deepNestingIs422TooDeep() throws {
        let deep = Array((#"{"data": "# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "}").utf8)
        for endpoint in endpoints {
            let reply = try send(endpoint, deep)
            #expect(reply.status == 422, "\(endpoint.0) \(endpoint.1)")
            #expect(reply.code == "too_deep")
        }
        // Even a hundred thousand levels are refused and the server stays up. Quickly, by the
        // work done: the parser, with the limits the server reads bodies with, gives up at the
        // 33rd bracket, byte 32 of 200,000, without reading on (or recursing).
        let deeper = Array((String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)).utf8)
        #expect(JSONBody.limits.maxDepth == 32)
        let refusal = #expect(throws: JSONError.self) { try JSONParser.parse(deeper, limits: JSONBody.limits) }
        #expect(refusal?.code == .tooDeep && refusal?.byteOffset == 32, "\(String(reflecting: refusal))")
        // Timed only against a hang: far beyond any slow machine.
        let start = ContinuousClock.now
        #expect(try send(endpoints[0], deeper).status == 422)
        #expect(ContinuousClock.now - start < .seconds(30))
        #expect(try server.me(account.token).status == 200)
    }

    @Test func nonObjectBodiesAre422() throws {
        for body in ["[]", "[{}]", "\"text\"", "42", "true", "null"] {
            for endpoint in endpoints {
                let reply = try send(endpoint, Array(body.utf8))
                #expect(reply.status == 422, "\(endpoint.0) \(endpoint.1) \(body)")
            }
        }
    }

    @Test func bodiesOverOneMebibyteAre413() throws {
        let big = Array(("{\"firstname\": \"" + String(repeating: "x", count: 1 << 20) + "\"}").utf8)
        for endpoint in endpoints {
            // Timed only against a hang: far beyond any slow machine. That the answer does not
            // wait for the megabyte is shown below, by a body that never comes.
            let start = ContinuousClock.now
            let reply = try send(endpoint, big)
            #expect(reply.status == 413, "\(endpoint.0) \(endpoint.1)")
            #expect(ContinuousClock.now - start < .seconds(30))
        }
        // Declared but not sent: refused from the head alone.
        let declared = try server.send("POST", "/users", headers: [("Content-Type", "application/json"), ("Content-Length", "1048577")], body: [])
        #expect(declared.status == 413)
        #expect(try server.me(account.token).status == 200)
    }

    @Test func otherMediaTypesAre415() throws {
        for type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"] {
            for endpoint in endpoints {
                let reply = try send(endpoint, Array("{}".utf8), contentType: type)
                #expect(reply.status == 415, "\(endpoint.0) \(endpoint.1) \(type)")
            }
        }
        // application/json with parameters is still JSON.
        let reply = try send(
            ("POST", "/users", nil), Array(#"{"email": "\#(server.uniqueEmail())", "password": "\#(server.uniquePassword())"}"#.utf8),
            contentType: "application/json; charset=utf-8")
        #expect(reply.status == 201)
        server.remember(token: reply.json["accessToken"]?.stringValue ?? "")
    }

    @Test func nothingLeaksFromErrors() throws {
        // A 500 or a parse error must not quote the body back (passwords travel in bodies).
        let password = server.uniquePassword()
        let bodies = [
            #"{"email": "x@example.com", "password": "\#(password)",}"#,
            #"{"email": "x@example.com", "password": "\#(password)", "extra": [[[["#,
            #"{"email": 1, "password": "\#(password)"}"#,
        ]
        for body in bodies {
            for endpoint in endpoints {
                let reply = try send(endpoint, Array(body.utf8))
                #expect(reply.status >= 400 && reply.status < 500)
                #expect(!reply.text.contains(password))
            }
        }
    }
}
