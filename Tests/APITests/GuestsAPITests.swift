import API
import Accounts
import Cryptography
import Foundation
import JSON
import Synchronization
import TestSupport
import Testing

/// Guests (`../shared/API.md`, "Guests and codes by mail"), end to end through a real SMTP
/// server: a guest upgrades in place and loses nothing, races of upgrades leave one owner, a
/// taken address changes nothing, idle guests go with their images.
@Suite(.testThreads, .serialized)
struct GuestsAPITests {
    typealias Mails = RecoveryAPITests

    struct Guest {
        let token: String
        let id: String
        let user: JSONValue
    }

    /// `POST /users/guest` (201 expected).
    static func guest(_ server: TestServer, body: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> Guest {
        let reply =
            try body.map { try server.call("POST", "/users/guest", json: $0) } ?? server.send("POST", "/users/guest")
        try #require(reply.status == 201, "guest: \(reply.status) \(reply.text)", sourceLocation: sourceLocation)
        let token = try #require(reply.json["accessToken"]?.stringValue, sourceLocation: sourceLocation)
        server.remember(token: token)
        let user = reply.json["user"] ?? .null
        return Guest(token: token, id: try #require(user["id"]?.stringValue, sourceLocation: sourceLocation), user: user)
    }

    /// Moves a guest to `address` by the confirmation link, as a user would; returns the answer of the link.
    static func upgrade(_ server: TestServer, _ smtp: TestSMTPServer, _ guest: Guest, to address: String) throws -> Reply {
        let patched = try EmailChangeAPITests.change(server, guest.token, to: address)
        try #require(patched.status == 200, "\(patched.text)")
        return try EmailChangeAPITests.confirm(server, try EmailChangeAPITests.link(smtp, to: address, path: "/verify-email"))
    }

    @Test func aGuestHasASessionAProfileAndNoAddress() throws {
        let server = try TestServer("guest_start")
        defer { server.shutdown() }
        let reply = try server.call("POST", "/users/guest", json: #"{"firstname": "Tamu", "data": {"level": 3}}"#)
        #expect(reply.status == 201, "\(reply.text)")
        #expect(reply.header("Location") == "/users/me")
        let token = try #require(reply.json["accessToken"]?.stringValue)
        server.remember(token: token)
        let user = try server.me(token).json
        #expect(user["isGuest"] == true && user["email"] == .null && user["emailVerified"] == false, "\(user)")
        #expect(user["firstname"] == "Tamu" && user["data"]?["level"] == 3)
        // No body at all is a guest too.
        let bare = try Self.guest(server)
        #expect(bare.user["isGuest"] == true && bare.user["firstname"] == "")
        // A guest's profile is a profile: fields, a PUT that names no address.
        let put = try server.call("PUT", "/users/me", token: token, json: #"{"email": null, "firstname": "Tamu", "data": {"level": 4}}"#)
        #expect(put.status == 200 && put.json["data"]?["level"] == 4 && put.json["email"] == .null, "\(put.text)")
        // Its export, like anyone's (no address gets the notice).
        let export = try server.send("GET", "/users/me/export", headers: [("Authorization", "Bearer \(token)")])
        #expect(export.status == 200 && export.header("Content-Type") == "application/zip", "\(export.status)")
        // An account with an address must name one.
        let account = try server.register()
        let noAddress = try server.call("PUT", "/users/me", token: account.token, json: #"{"email": null, "firstname": "A"}"#)
        #expect(noAddress.status == 422 && noAddress.code == "invalid_value", "\(noAddress.text)")
        // What needs an address says so.
        for (path, body) in [
            ("/users/me/reauthenticate/code", ""), ("/users/me/verify-email", ""), ("/users/me/password", #"{"newPassword": "a first password"}"#),
        ] {
            let refused = try server.call("POST", path, token: token, json: body.isEmpty ? nil : body)
            #expect(refused.status == 409 && refused.code == "no_address", "\(path): \(refused.status) \(refused.text)")
        }
        // Its only proof is its session: adding a first way in needs no other, however old.
        server.advanceClock(by: 3_600)
        let options = try server.call("POST", "/users/me/passkeys/registration/options", token: token)
        #expect(options.status == 200, "\(options.text)")
        #expect(options.json["user"]?["name"] == "Tamu", "a guest's passkey is named by its first name")
        // A guest deletes itself without a password.
        let gone = try server.call("DELETE", "/users/me", token: bare.token)
        #expect(gone.status == 204, "\(gone.text)")
        #expect(try server.me(bare.token).status == 401)
        #expect(server.leaks().isEmpty, "\(server.leaks())")
    }

    /// The upgrade keeps everything: the id, the fields, the images byte for byte, the session;
    /// then a first password without `oldPassword` signs in with the new address.
    @Test func anUpgradeKeepsTheIdTheFieldsTheImagesAndTheSession() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("guest_upgrade", smtp: smtp)
        defer { server.shutdown() }
        let guest = try Self.guest(server, body: #"{"firstname": "Tamu", "data": {"level": 7, "nickname": "kupu"}}"#)
        let image = RealFiles.jpeg5x3
        let uploaded = try ImageScenarios.upload(server, guest.token, "image/jpeg", image)
        #expect(uploaded.status == 201, "\(uploaded.text)")
        let imageID = try #require(uploaded.json["id"]?.stringValue)
        let before = try server.me(guest.token).json
        // The guest upgrades a day later: long after its session's sign-in.
        server.advanceClock(by: 86_400)

        let address = server.uniqueEmail("tamu")
        let confirmed = try Self.upgrade(server, smtp, guest, to: address)
        #expect(confirmed.status == 200, "\(confirmed.text)")
        let after = try server.me(guest.token)
        #expect(after.status == 200, "the guest's session lives on")
        #expect(after.json["id"] == before["id"] && after.json["data"] == before["data"] && after.json["firstname"] == "Tamu")
        #expect(after.json["email"]?.stringValue == address && after.json["emailVerified"] == true && after.json["isGuest"] == false)
        let original = try ImageScenarios.get(server, guest.token, "/users/me/images/\(imageID)?download=1")
        #expect(original.status == 200 && original.body == image, "the image, byte for byte")
        // No undo link goes anywhere: the guest had no address to put back.
        #expect(!smtp.messages().contains { $0.contains("/undo-email-change#") })

        let password = server.uniquePassword("first")
        server.remember(password: password)
        // The confirmation counts as the guest's session proving itself: no other proof is asked.
        let first = try server.call("POST", "/users/me/password", token: guest.token, json: #"{"newPassword": "\#(password)"}"#)
        #expect(first.status == 200, "\(first.text)")
        let signedIn = try server.signIn(address, password)
        #expect(signedIn.status == 200 && signedIn.json["user"]?["id"] == before["id"], "\(signedIn.text)")
        // From now on the password is asked for.
        let second = try server.call(
            "POST", "/users/me/password", token: signedIn.json["accessToken"]?.stringValue, json: #"{"newPassword": "another one"}"#)
        #expect(second.status == 422 && second.code == "invalid_value", "\(second.text)")
        #expect(server.leaks().isEmpty, "\(server.leaks())")
    }

    /// Two guests confirm one address at once: one gets it, the other `409 email_taken` and keeps
    /// what it had; a guest asking for a taken address changes nothing at all.
    @Test func twoGuestsRacingForOneAddressLeaveOneOwnerAndATakenAddressChangesNothing() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("guest_race", smtp: smtp)
        defer { server.shutdown() }
        let address = server.uniqueEmail("contested")
        let guests = try (0..<2).map { index in try Self.guest(server, body: #"{"data": {"slot": \#(index)}}"#) }
        for guest in guests { #expect(try EmailChangeAPITests.change(server, guest.token, to: address).status == 200) }
        let mails = try smtp.waitForMessages(count: 2, where: { Mails.isTo(address)($0) && $0.contains("/verify-email#") })
        let links = try mails.map(Mails.token)
        let answers = Mutex<[Int]>([])
        let together = Barrier(links.count)
        try onThreads(links.count) { index in
            try together.arrive()
            let status = try EmailChangeAPITests.confirm(server, links[index]).status
            answers.withLock { $0.append(status) }
        }
        #expect(answers.withLock { $0.sorted() } == [200, 409], "\(answers.withLock { $0 })")
        let owners = try guests.map { try server.me($0.token).json }
        #expect(owners.filter { $0["email"]?.stringValue == address }.count == 1, "\(owners)")
        let loser = try #require(owners.first { $0["email"] == .null })
        #expect(loser["isGuest"] == true && loser["data"]?["slot"] != nil)

        // An upgrade to a taken address: 409, and nothing else of the request is saved.
        let third = try Self.guest(server, body: #"{"firstname": "Before"}"#)
        let etag = try server.me(third.token).header("ETag")
        let taken = try server.call("PATCH", "/users/me", token: third.token, json: #"{"email": "\#(address)", "firstname": "After"}"#)
        #expect(taken.status == 409 && taken.code == "email_taken", "\(taken.text)")
        let unchanged = try server.me(third.token)
        #expect(unchanged.header("ETag") == etag && unchanged.json["firstname"] == "Before" && unchanged.json["pendingEmail"] == .null)
        #expect(server.leaks().isEmpty, "\(server.leaks())")
    }

    /// One guest asks for two addresses at once and confirms every link that came at once: it
    /// ends with the later request's address, and the other stays free for anyone.
    @Test func oneGuestRacingTwoAddressesEndsWithOne() throws {
        let smtp = try TestSMTPServer()
        let server = try Mails.server("guest_two", smtp: smtp)
        defer { server.shutdown() }
        let guest = try Self.guest(server)
        let addresses = [server.uniqueEmail("first"), server.uniqueEmail("second")]
        let patches = Barrier(2)
        try onThreads(2) { index in
            try patches.arrive()
            let status = try EmailChangeAPITests.change(server, guest.token, to: addresses[index]).status
            if status != 200 { throw TestFailure("PATCH: \(status)") }
        }
        // The later request replaced the earlier: its address is the pending one. The earlier's
        // link died with it, and its mail went out only if it was sent before (else it was voided).
        let pending = try #require(try server.me(guest.token).json["pendingEmail"]?.stringValue)
        let winner = try EmailChangeAPITests.link(smtp, to: pending, path: "/verify-email")
        let other = addresses.first { $0 != pending }!
        let stale = try smtp.messages().filter { Mails.isTo(other)($0) && $0.contains("/verify-email#") }.map(Mails.token)
        let links = [winner] + stale
        let answers = Mutex<[Int]>([])
        let confirmations = Barrier(links.count)
        try onThreads(links.count) { index in
            try confirmations.arrive()
            let status = try EmailChangeAPITests.confirm(server, links[index]).status
            answers.withLock { $0.append(status) }
        }
        #expect(answers.withLock { $0.filter { $0 == 200 }.count } == 1, "\(answers.withLock { $0 })")
        let user = try server.me(guest.token).json
        #expect(user["email"]?.stringValue == pending && user["isGuest"] == false && user["pendingEmail"] == .null, "\(user)")
        #expect(try server.call("POST", "/users", json: #"{"email": "\#(other)", "password": "a password of its own"}"#).status == 201)
    }

    /// Guests idle for `--guest-ttl-days` go with their images (rows and files); one that came
    /// back in time stays, and so does every account that is not a guest.
    @Test func idleGuestsAreDeletedWithTheirImages() throws {
        let directory = try makeTemporaryDirectory("exo-guest-sweep")
        let server = try TestServer("guest_sweep") {
            $0.accounts.guestIdleSeconds = 3_600
            $0.images.storage = .filesystem
            $0.images.directory = directory
        }
        defer { server.shutdown() }
        let idle = try Self.guest(server)
        #expect(try ImageScenarios.upload(server, idle.token, "image/png", RealFiles.png3x2).status == 201)
        let returning = try Self.guest(server)
        let account = try server.register()
        #expect(try server.app.deleteIdleGuests() == 0, "nobody is idle yet")
        server.advanceClock(by: 2 * 3_600)
        #expect(try server.me(returning.token).status == 200)
        server.app.accounts.sessions.recordSessionUse()
        #expect(try server.app.deleteIdleGuests() == 1)
        #expect(try server.me(idle.token).status == 401)
        #expect(try server.me(returning.token).status == 200)
        #expect(try server.me(account.token).status == 200)
        let images = try server.withDatabase {
            try $0.query("SELECT count(*)::int8 FROM images WHERE user_id = \(idle.id)::uuid")[0].decode(Int.self, at: 0)
        }
        #expect(images == 0)
        #expect(try server.app.images.sweep().orphanFiles == 0, "the guest's files went with it")
        #expect(try server.metric("exosphere_guests_deleted_total") == 1)
        #expect(try server.metric("exosphere_guests_created_total") == 2)
    }

    /// The console's filter and count.
    @Test func administratorsFilterAndCountGuests() throws {
        let server = try TestServer("guest_admin")
        defer { server.shutdown() }
        let admin = try AdminAPITests.rootAdmin(server)
        let guest = try Self.guest(server)
        let account = try server.register()
        let guests = try server.call("GET", "/admin/users?guest=true", token: admin)
        let ids = guests.json["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        #expect(ids == [guest.id], "\(guests.text)")
        let others = try server.call("GET", "/admin/users?guest=false", token: admin)
        #expect(others.json["users"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [account.id])
        #expect(try server.call("GET", "/admin/users?guest=maybe", token: admin).status == 422)
        #expect(try server.call("GET", "/admin/stats", token: admin).json["guests"] == 1)
        // A guest has no address to mail a reset to.
        let reset = try server.call("POST", "/admin/users/\(guest.id)/password-reset", token: admin)
        #expect(reset.status == 409 && reset.code == "no_address", "\(reset.text)")
    }

    /// A passkey is a way back in: the guest becomes a full account with no address (the
    /// database ends `is_guest` as the passkey's row is made), and the passkey signs it in again.
    @Test func aPasskeyUpgradesAGuestWithoutAnAddress() throws {
        let (server, port) = try PasskeysAPITests.server("guest_passkey")
        defer { PasskeysAPITests.finish(server) }
        let origin = "http://localhost:\(port)"
        let key = try SoftwareAuthenticator()
        let guest = try Self.guest(server)
        let creation = try server.call("POST", "/users/me/passkeys/registration/options", token: guest.token)
        let challenge = try #require(creation.json["challenge"]?.stringValue, "\(creation.text)")
        let clientData = SoftwareAuthenticator.clientData("webauthn.create", challenge: challenge, origin: origin)
        let object = SoftwareAuthenticator.attestationObject(
            "none", data: key.authenticatorData(rpID: "localhost", flags: 0x45, count: 0, attested: true))
        let id = TestSigningKeys.base64URL(key.credentialID)
        let registered = try server.call(
            "POST", "/users/me/passkeys/registration", token: guest.token,
            json:
                #"{"id": "\#(id)", "rawId": "\#(id)", "type": "public-key", "response": {"clientDataJSON": "\#(TestSigningKeys.base64URL(clientData))", "attestationObject": "\#(TestSigningKeys.base64URL(object))"}}"#
        )
        #expect(registered.status == 201, "\(registered.text)")
        let user = try server.me(guest.token)
        #expect(user.json["isGuest"] == false && user.json["email"] == .null, "\(user.text)")
        #expect(user.header("ETag") != nil && user.json["id"]?.stringValue == guest.id)

        let options = try server.call("POST", "/users/signin/passkey/options")
        let signInChallenge = try #require(options.json["challenge"]?.stringValue)
        let assertionData = SoftwareAuthenticator.clientData("webauthn.get", challenge: signInChallenge, origin: origin)
        let data = key.authenticatorData(rpID: "localhost", flags: 0x05, count: 1, attested: false)
        let signature = try key.sign(data + SHA256.hash(assertionData))
        let handle = withUnsafeBytes(of: try #require(UUID(uuidString: guest.id)).uuid) { Array($0) }
        let signedIn = try server.call(
            "POST", "/users/signin/passkey",
            json:
                #"{"id": "\#(id)", "rawId": "\#(id)", "type": "public-key", "response": {"clientDataJSON": "\#(TestSigningKeys.base64URL(assertionData))", "authenticatorData": "\#(TestSigningKeys.base64URL(data))", "signature": "\#(TestSigningKeys.base64URL(signature))", "userHandle": "\#(TestSigningKeys.base64URL(handle))"}}"#
        )
        #expect(signedIn.status == 200 && signedIn.json["user"]?["id"]?.stringValue == guest.id, "\(signedIn.text)")
        if let token = signedIn.json["accessToken"]?.stringValue { server.remember(token: token) }
    }
}
