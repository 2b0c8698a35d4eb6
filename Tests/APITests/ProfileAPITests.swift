import TestSupport
import API
import FoundationEssentials
import Glibc
import JSON
import Postgres
import Synchronization
import Testing

/// `GET`, `PUT` and `PATCH /users/me`: representation, ETags, replacement and merge patches; run
/// in full twice, as the image scenarios are run against each storage: with the database pipelines
/// on (the event loops answer these routes) and off (the worker pool does). Each run proves its
/// mode: on, the pipelined statement counter rises during the test; off, the server has no
/// pipeline metrics and no pipelined connection.
@Suite(.testThreads)
enum ProfileAPITests {

    // MARK: - The Mesosfer flow

    static func mesosferFlow(_ server: TestServer) throws {
        let email = server.uniqueEmail("mesosfer")
        let password = server.uniquePassword()
        let registered = try server.register(email: email, password: password)

        let signIn = try server.signIn(email, password)
        #expect(signIn.status == 200)
        let token = try #require(signIn.json["accessToken"]?.stringValue)

        let me = try server.me(token)
        #expect(me.status == 200)
        #expect(me.json["email"]?.stringValue == email)
        #expect(me.json["id"]?.stringValue == registered.id)

        let put = try server.call(
            "PUT", "/users/me", token: token,
            json: """
                {"email": "\(email)", "firstname": "Ayu", "lastname": "Lestari",
                 "data": {"dateOfBirth": "1994-05-17", "height": 177.5, "weight": 78, "isMarried": true}}
                """)
        #expect(put.status == 200)
        for reply in [put, try server.me(token)] {
            let data = reply.json["data"]
            #expect(reply.json["firstname"]?.stringValue == "Ayu")
            #expect(reply.json["lastname"]?.stringValue == "Lestari")
            #expect(data?["dateOfBirth"] == .string("1994-05-17"))
            #expect(data?["height"]?.numberValue?.text == "177.5")
            #expect(data?["height"]?.numberValue?.isInteger == false)
            #expect(data?["weight"]?.numberValue?.text == "78")
            #expect(data?["weight"]?.numberValue?.isInteger == true)
            #expect(data?["isMarried"] == .bool(true))
            #expect(keys(data) == ["dateOfBirth", "height", "isMarried", "weight"])
        }
        let schema = try server.call("GET", "/users/schema", token: token)
        #expect(schema.status == 200)
        #expect(schema.json["fields"]?["dateOfBirth"] == .string("date"))
        #expect(schema.json["fields"]?["height"] == .string("double"))
        #expect(schema.json["fields"]?["weight"] == .string("integer"))
        #expect(schema.json["fields"]?["isMarried"] == .string("boolean"))

        let newPassword = server.uniquePassword("new")
        let change = try server.call(
            "POST", "/users/me/password", token: token,
            json: #"{"oldPassword": "\#(password)", "newPassword": "\#(newPassword)"}"#)
        #expect(change.status == 200)
        let newToken = try #require(change.json["accessToken"]?.stringValue)
        server.remember(token: newToken)
        #expect(change.json["revokedSessions"]?.numberValue?.text == "1")  // the registration session
        #expect(try server.me(token).status == 401)
        #expect(try server.me(registered.token).status == 401)
        let after = try server.me(newToken)
        #expect(after.status == 200)
        #expect(after.json["data"]?["height"]?.numberValue?.text == "177.5")
        #expect(try server.signIn(email, password).status == 401)
        #expect(try server.signIn(email, newPassword).status == 200)
    }

    // MARK: - GET and ETags

    static func etagAndIfNoneMatch(_ server: TestServer) throws {
        let account = try server.register()
        let first = try server.me(account.token)
        #expect(first.header("Content-Type") == "application/json")
        let etag = try #require(first.header("ETag"))
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""), "a strong entity tag")
        #expect(first.json == account.user)

        let notModified = try server.call("GET", "/users/me", token: account.token, headers: [("If-None-Match", etag)])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)
        #expect(notModified.header("ETag") == etag)
        #expect(try server.call("GET", "/users/me", token: account.token, headers: [("If-None-Match", "W/\(etag)")]).status == 304)
        #expect(try server.call("GET", "/users/me", token: account.token, headers: [("If-None-Match", "\"nope\", \(etag)")]).status == 304)
        #expect(try server.call("GET", "/users/me", token: account.token, headers: [("If-None-Match", "*")]).status == 304)
        #expect(try server.call("GET", "/users/me", token: account.token, headers: [("If-None-Match", "\"nope\"")]).status == 200)
        // If-None-Match never skips authentication.
        #expect(try server.call("GET", "/users/me", headers: [("If-None-Match", etag)]).status == 401)

        let patched = try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "Changed"}"#)
        #expect(patched.status == 200)
        let newTag = try #require(patched.header("ETag"))
        #expect(newTag != etag)
        let stale = try server.call("GET", "/users/me", token: account.token, headers: [("If-None-Match", etag)])
        #expect(stale.status == 200)
        #expect(stale.json["firstname"]?.stringValue == "Changed")
        #expect(stale.header("ETag") == newTag)
    }

    // MARK: - PUT

    static func putReplacesTheEditableRepresentation(_ server: TestServer) throws {
        let account = try server.register(extra: #", "firstname": "Ayu", "lastname": "Lestari", "data": {"putA": "x", "putB": 1}"#)
        let reply = try server.call("PUT", "/users/me", token: account.token, json: #"{"email": "\#(account.email)"}"#)
        #expect(reply.status == 200)
        #expect(reply.json["firstname"]?.stringValue == "")
        #expect(reply.json["lastname"]?.stringValue == "")
        #expect(reply.json["data"] == .object(JSONObject()))
        #expect(reply.header("ETag") != nil)
        #expect(try server.me(account.token).json == reply.json)

        let replaced = try server.call(
            "PUT", "/users/me", token: account.token,
            json: #"{"email": "\#(account.email)", "lastname": "L", "data": {"putB": 2}}"#)
        #expect(replaced.status == 200)
        #expect(replaced.json["firstname"]?.stringValue == "")
        #expect(replaced.json["lastname"]?.stringValue == "L")
        #expect(replaced.json["data"] == .object(["putB": 2]))
    }

    static func putNeedsAnEmailAndRefusesPasswordsAndUnknownKeys(_ server: TestServer) throws {
        let account = try server.register(extra: #", "firstname": "Keep""#)
        let noEmail = try server.call("PUT", "/users/me", token: account.token, json: #"{"firstname": "X"}"#)
        #expect(noEmail.status == 422)
        #expect(noEmail.firstError.field == "email")
        let invalid = try server.call("PUT", "/users/me", token: account.token, json: #"{"email": "nope"}"#)
        #expect(invalid.status == 422)
        #expect(invalid.code == "invalid_email")

        let password = try server.call(
            "PUT", "/users/me", token: account.token,
            json: #"{"email": "\#(account.email)", "password": "\#(server.uniquePassword())"}"#)
        #expect(password.status == 422)
        #expect(password.code == "password_not_allowed")
        #expect(password.firstError.field == "password")
        #expect(password.firstError.detail?.contains("/users/me/password") == true)

        let unknown = try server.call("PUT", "/users/me", token: account.token, json: #"{"email": "\#(account.email)", "lastName": "x"}"#)
        #expect(unknown.status == 422)
        #expect(unknown.code == "unknown_field")
        #expect(unknown.firstError.field == "lastName")
        #expect(try server.me(account.token).json["firstname"]?.stringValue == "Keep", "refused writes changed nothing")
        #expect(try server.signIn(account.email, account.password).status == 200)
    }

    static func readOnlyKeysAreIgnoredWhenEchoed(_ server: TestServer) throws {
        let account = try server.register()
        var echoed = try #require(try server.me(account.token).json.objectValue)
        echoed["firstname"] = "Echo"
        echoed["id"] = .string(UUID().uuidString.lowercased())
        echoed["emailVerified"] = true
        echoed["createdAt"] = "2000-01-01T00:00:00.000Z"
        echoed["updatedAt"] = "2000-01-01T00:00:00.000Z"
        let put = try server.call("PUT", "/users/me", token: account.token, json: JSONValue.object(echoed).serializedString())
        #expect(put.status == 200)
        #expect(put.json["firstname"]?.stringValue == "Echo")
        #expect(put.json["id"]?.stringValue == account.id)
        #expect(put.json["emailVerified"] == .bool(false))
        #expect(put.json["createdAt"] == account.user["createdAt"])
        #expect(put.json["updatedAt"] != .string("2000-01-01T00:00:00.000Z"))

        let patch = try server.call(
            "PATCH", "/users/me", token: account.token,
            json: #"{"id": "x", "emailVerified": true, "createdAt": 5, "updatedAt": null, "lastname": "P"}"#)
        #expect(patch.status == 200)
        #expect(patch.json["lastname"]?.stringValue == "P")
        #expect(patch.json["id"]?.stringValue == account.id)
        #expect(patch.json["emailVerified"] == .bool(false))
    }

    // MARK: - PATCH

    static func patchIsAMergePatch(_ server: TestServer) throws {
        let account = try server.register(extra: #", "firstname": "F", "lastname": "L", "data": {"mpA": "a", "mpB": 2, "mpC": true}"#)
        let one = try server.call("PATCH", "/users/me", token: account.token, json: #"{"lastname": "Lestari"}"#)
        #expect(one.status == 200)
        #expect(one.json["firstname"]?.stringValue == "F")
        #expect(one.json["lastname"]?.stringValue == "Lestari")
        #expect(one.json["data"] == .object(["mpA": "a", "mpB": 2, "mpC": true]))

        let two = try server.call(
            "PATCH", "/users/me", token: account.token, json: #"{"data": {"mpB": null, "mpC": false}}"#,
            contentType: "application/merge-patch+json")
        #expect(two.status == 200)
        #expect(two.json["data"] == .object(["mpA": "a", "mpC": false]))
        #expect(
            try server.call(
                "PATCH", "/users/me", token: account.token, json: #"{"firstname": "G"}"#,
                contentType: "application/merge-patch+json; charset=utf-8"
            ).status == 200)
        #expect(
            try server.call(
                "PATCH", "/users/me", token: account.token, json: #"{"firstname": "H"}"#,
                contentType: "Application/JSON"
            ).status == 200)

        // Removing a field that is not there is fine; null names become empty.
        let three = try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"mpZ": null}, "firstname": null}"#)
        #expect(three.status == 200)
        #expect(three.json["firstname"]?.stringValue == "")
        #expect(three.json["data"] == .object(["mpA": "a", "mpC": false]))

        let cleared = try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": null}"#)
        #expect(cleared.status == 200)
        #expect(cleared.json["data"] == .object(JSONObject()))
        #expect(cleared.json["lastname"]?.stringValue == "Lestari")
        #expect(try server.me(account.token).json["data"] == .object(JSONObject()))
    }

    static func patchRefusesOtherMediaTypesPasswordsAndUnknownKeys(_ server: TestServer) throws {
        let account = try server.register(extra: #", "firstname": "Keep""#)
        for type in ["text/plain", "application/x-www-form-urlencoded", "application/json-patch+json"] {
            let reply = try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "X"}"#, contentType: type)
            #expect(reply.status == 415, "\(type)")
            #expect(reply.header("Content-Type") == "application/problem+json")
        }
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "X"}"#, contentType: nil).status == 415)
        let password = try server.call("PATCH", "/users/me", token: account.token, json: #"{"password": "\#(server.uniquePassword())"}"#)
        #expect(password.status == 422)
        #expect(password.code == "password_not_allowed")
        let unknown = try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstName": "X"}"#)
        #expect(unknown.status == 422)
        #expect(unknown.code == "unknown_field")
        let nullEmail = try server.call("PATCH", "/users/me", token: account.token, json: #"{"email": null}"#)
        #expect(nullEmail.status == 422)
        let dataArray = try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": [1]}"#)
        #expect(dataArray.status == 422)
        #expect(dataArray.code == "invalid_type")
        #expect(try server.me(account.token).json["firstname"]?.stringValue == "Keep")
    }

    // MARK: - If-Match

    static func ifMatchGuardsPutAndPatch(_ server: TestServer) throws {
        let account = try server.register(extra: #", "firstname": "Original""#)
        let etag = try #require(try server.me(account.token).header("ETag"))
        let moved = try server.call("PATCH", "/users/me", token: account.token, json: #"{"lastname": "Moved"}"#)
        let current = try #require(moved.header("ETag"))

        for (method, body) in [("PATCH", #"{"firstname": "Lost"}"#), ("PUT", #"{"email": "\#(account.email)", "firstname": "Lost"}"#)] {
            let stale = try server.call(method, "/users/me", token: account.token, json: body, headers: [("If-Match", etag)])
            #expect(stale.status == 412, "\(method)")
            #expect(stale.code == "precondition_failed")
            #expect(stale.header("Content-Type") == "application/problem+json")
            let unchanged = try server.me(account.token)
            #expect(unchanged.json["firstname"]?.stringValue == "Original")
            #expect(unchanged.header("ETag") == current, "a refused write does not bump the version")
        }
        // A stale If-Match wins over a body that would also be invalid: nothing is written either way.
        let ok = try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "Won"}"#, headers: [("If-Match", current)])
        #expect(ok.status == 200)
        #expect(ok.json["firstname"]?.stringValue == "Won")
        let next = try #require(ok.header("ETag"))
        #expect(next != current)
        let put = try server.call(
            "PUT", "/users/me", token: account.token, json: #"{"email": "\#(account.email)", "firstname": "Put"}"#,
            headers: [("If-Match", next)])
        #expect(put.status == 200)
        #expect(
            try server.call(
                "PATCH", "/users/me", token: account.token, json: #"{"firstname": "Any"}"#,
                headers: [("If-Match", "*")]
            ).status == 200)
        #expect(
            try server.call(
                "PATCH", "/users/me", token: account.token, json: #"{"firstname": "Lost"}"#,
                headers: [("If-Match", "\"garbage\"")]
            ).status == 412)
    }

    static func concurrentPatchesOfDifferentFieldsBothSurvive(_ server: TestServer) throws {
        let account = try server.register(extra: #", "data": {"lostA": 0, "lostB": 0}"#)
        let failures = Atomic<Int>(0)
        for round in 1...15 {
            let barrier = Barrier(2)
            try onThreads(2) { index in
                try barrier.arrive()
                let body =
                    index == 0
                    ? #"{"firstname": "f\#(round)", "data": {"lostA": \#(round)}}"#
                    : #"{"lastname": "l\#(round)", "data": {"lostB": \#(round)}}"#
                if (try? server.call("PATCH", "/users/me", token: account.token, json: body))?.status != 200 {
                    failures.add(1, ordering: .relaxed)
                }
            }
            let me = try server.me(account.token).json
            #expect(me["firstname"]?.stringValue == "f\(round)")
            #expect(me["lastname"]?.stringValue == "l\(round)")
            #expect(me["data"] == .object(["lostA": .number(JSONNumber(round)), "lostB": .number(JSONNumber(round))]))
        }
        #expect(failures.load(ordering: .relaxed) == 0)
    }

    // MARK: - Email changes

    /// Another address waits for its proof: `email` and `emailVerified` stay, `pendingEmail` is
    /// set, and sign-in stays with the current address (`EmailChangeAPITests` follows the mail).
    static func changingTheEmailWaitsForProof(_ server: TestServer) throws {
        let account = try server.register()
        let uuid = try #require(UUID(uuidString: account.id))
        try server.withDatabase { _ = try $0.execute("UPDATE users SET email_verified = true WHERE id = \(uuid)") }
        #expect(try server.me(account.token).json["emailVerified"] == .bool(true))
        #expect(try server.me(account.token).json["pendingEmail"] == .null)
        // Other edits keep it; so does the same address in another case (it is the same identity).
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "V"}"#).json["emailVerified"] == .bool(true))
        #expect(
            try server.call("PUT", "/users/me", token: account.token, json: #"{"email": "\#(account.email.uppercased())"}"#).json["emailVerified"]
                == .bool(true))

        let newEmail = server.uniqueEmail("moved")
        let patched = try server.call("PATCH", "/users/me", token: account.token, json: #"{"email": "\#(newEmail)", "firstname": "W"}"#)
        #expect(patched.status == 200)
        #expect(patched.json["email"]?.stringValue?.lowercased() == account.email)
        #expect(patched.json["pendingEmail"]?.stringValue == newEmail)
        #expect(patched.json["emailVerified"] == .bool(true))
        #expect(patched.json["firstname"] == "W")
        let other = server.uniqueEmail("moved-again")
        let put = try server.call("PUT", "/users/me", token: account.token, json: #"{"email": " \#(other) "}"#)
        #expect(put.status == 200)
        #expect(put.json["email"]?.stringValue?.lowercased() == account.email)
        #expect(put.json["pendingEmail"]?.stringValue == other)
        // The pending key echoed back is read-only, ignored like `emailVerified`.
        let echoed = try server.call(
            "PATCH", "/users/me", token: account.token, json: #"{"pendingEmail": "x@example.com", "lastname": "E"}"#)
        #expect(echoed.status == 200)
        #expect(echoed.json["pendingEmail"]?.stringValue == other)
        // The current address signs in; the pending ones do not.
        #expect(try server.signIn(account.email, account.password).status == 200)
        #expect(try server.signIn(other, account.password).status == 401)
        #expect(try server.signIn(newEmail, account.password).status == 401)
    }

    static func changingToATakenEmailIsAConflict(_ server: TestServer) throws {
        let alice = try server.register()
        let bob = try server.register(extra: #", "firstname": "Bob""#)
        for (method, body) in [
            ("PATCH", #"{"email": "\#(alice.email.uppercased())", "firstname": "Changed"}"#),
            ("PUT", #"{"email": " \#(alice.email) ", "firstname": "Changed"}"#),
        ] {
            let reply = try server.call(method, "/users/me", token: bob.token, json: body)
            #expect(reply.status == 409, "\(method)")
            #expect(reply.code == "email_taken")
        }
        let me = try server.me(bob.token).json
        #expect(me["email"]?.stringValue == bob.email)
        #expect(me["firstname"]?.stringValue == "Bob")
    }

    static func namesAreBoundedAndNeverHoldNUL(_ server: TestServer) throws {
        let account = try server.register()
        let hundred = String(repeating: "名", count: 100)
        #expect(try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "\#(hundred)"}"#).status == 200)
        let long = try server.call("PATCH", "/users/me", token: account.token, json: #"{"firstname": "\#(hundred)x"}"#)
        #expect(long.status == 422)
        #expect(long.firstError.field == "firstname")
        let nul = try server.call("PATCH", "/users/me", token: account.token, json: #"{"lastname": "a\u0000b"}"#)
        #expect(nul.status == 422)
        #expect(nul.firstError.field == "lastname")
        #expect(try server.me(account.token).json["firstname"]?.stringValue == hundred)
    }

    // MARK: - The two modes

    /// Runs `scenario` on `server` and proves that it ran in the server's mode. Pipelining on: the
    /// loop's pipeline is opened first (a loop's first request goes to the workers while it opens),
    /// and `exosphere_db_pipelined_queries_total` must rise while the scenario runs. Off: the
    /// pipeline metrics are absent before and after, and no pipelined connection exists.
    static func run(
        _ server: TestServer, pipelining: Bool, _ scenario: (TestServer) throws -> Void,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        guard pipelining else {
            #expect(try server.pipelineCounters() == nil, "pipelining off: no pipeline metrics", sourceLocation: sourceLocation)
            try scenario(server)
            #expect(try server.pipelineCounters() == nil, "pipelining off: no pipeline metrics", sourceLocation: sourceLocation)
            #expect(try server.pipelineBackends() == 0, "pipelining off: no pipelined connection", sourceLocation: sourceLocation)
            return
        }
        if try server.metric("exosphere_db_pipelines_open") != 1 {
            try server.openPipelines(eventLoops: 1, token: try server.register().token)
        }
        let before = try #require(try server.pipelineCounters(), "pipelining on: the pipeline metrics exist", sourceLocation: sourceLocation)
        try scenario(server)
        let after = try #require(try server.pipelineCounters(), sourceLocation: sourceLocation)
        let ran = after - before
        #expect(ran.sent > 0, "pipelining on: no statement went out on the pipeline (\(ran))", sourceLocation: sourceLocation)
    }

    @Suite(.liveServer("profile_loops") { $0.databasePipelining = true }, .serialized)
    struct Pipelined {
        let server: TestServer
        init() throws { server = try #require(TestServer.current) }

        @Test func mesosferFlow() throws { try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.mesosferFlow) }
        @Test func etagAndIfNoneMatch() throws { try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.etagAndIfNoneMatch) }
        @Test func putReplacesTheEditableRepresentation() throws {
            try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.putReplacesTheEditableRepresentation)
        }
        @Test func putNeedsAnEmailAndRefusesPasswordsAndUnknownKeys() throws {
            try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.putNeedsAnEmailAndRefusesPasswordsAndUnknownKeys)
        }
        @Test func readOnlyKeysAreIgnoredWhenEchoed() throws {
            try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.readOnlyKeysAreIgnoredWhenEchoed)
        }
        @Test func patchIsAMergePatch() throws { try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.patchIsAMergePatch) }
        @Test func patchRefusesOtherMediaTypesPasswordsAndUnknownKeys() throws {
            try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.patchRefusesOtherMediaTypesPasswordsAndUnknownKeys)
        }
        @Test func ifMatchGuardsPutAndPatch() throws { try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.ifMatchGuardsPutAndPatch) }
        @Test func concurrentPatchesOfDifferentFieldsBothSurvive() throws {
            try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.concurrentPatchesOfDifferentFieldsBothSurvive)
        }
        @Test func changingTheEmailWaitsForProof() throws {
            try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.changingTheEmailWaitsForProof)
        }
        @Test func changingToATakenEmailIsAConflict() throws {
            try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.changingToATakenEmailIsAConflict)
        }
        @Test func namesAreBoundedAndNeverHoldNUL() throws {
            try ProfileAPITests.run(server, pipelining: true, ProfileAPITests.namesAreBoundedAndNeverHoldNUL)
        }
    }

    @Suite(.liveServer("profile_pool") { $0.databasePipelining = false }, .serialized)
    struct WorkerPool {
        let server: TestServer
        init() throws { server = try #require(TestServer.current) }

        @Test func mesosferFlow() throws { try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.mesosferFlow) }
        @Test func etagAndIfNoneMatch() throws { try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.etagAndIfNoneMatch) }
        @Test func putReplacesTheEditableRepresentation() throws {
            try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.putReplacesTheEditableRepresentation)
        }
        @Test func putNeedsAnEmailAndRefusesPasswordsAndUnknownKeys() throws {
            try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.putNeedsAnEmailAndRefusesPasswordsAndUnknownKeys)
        }
        @Test func readOnlyKeysAreIgnoredWhenEchoed() throws {
            try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.readOnlyKeysAreIgnoredWhenEchoed)
        }
        @Test func patchIsAMergePatch() throws { try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.patchIsAMergePatch) }
        @Test func patchRefusesOtherMediaTypesPasswordsAndUnknownKeys() throws {
            try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.patchRefusesOtherMediaTypesPasswordsAndUnknownKeys)
        }
        @Test func ifMatchGuardsPutAndPatch() throws { try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.ifMatchGuardsPutAndPatch) }
        @Test func concurrentPatchesOfDifferentFieldsBothSurvive() throws {
            try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.concurrentPatchesOfDifferentFieldsBothSurvive)
        }
        @Test func changingTheEmailWaitsForProof() throws {
            try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.changingTheEmailWaitsForProof)
        }
        @Test func changingToATakenEmailIsAConflict() throws {
            try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.changingToATakenEmailIsAConflict)
        }
        @Test func namesAreBoundedAndNeverHoldNUL() throws {
            try ProfileAPITests.run(server, pipelining: false, ProfileAPITests.namesAreBoundedAndNeverHoldNUL)
        }
    }
}
