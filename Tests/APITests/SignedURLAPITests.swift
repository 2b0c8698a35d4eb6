import API
import FoundationEssentials
import Glibc
import Images
import JSON
import Postgres
import TestSupport
import Testing

/// `signedUrl` in image metadata and `GET /images/{id}?exp=…&sig=…`: the bytes without a token,
/// for exactly the image and the time the server signed, across a key rotation and instances.
@Suite(.testThreads, .serialized)
struct SignedURLAPITests {
    static func upload(
        _ server: TestServer, _ account: TestServer.Account, _ bytes: [UInt8] = RealFiles.png3x2, type: String = "image/png"
    ) throws -> JSONValue {
        let created = try ImageScenarios.upload(server, account.token, type, bytes)
        try #require(created.status == 201, "\(created.text)")
        return created.json
    }

    @Test func aSignedURLServesTheBytesWithoutATokenUntilItExpires() throws {
        let server = try TestServer("signed")
        defer { server.shutdown() }
        let account = try server.register()
        let image = try Self.upload(server, account)
        let url = try #require(image["signedUrl"]?.stringValue)
        let id = try #require(image["id"]?.stringValue)
        #expect(url.hasPrefix("/images/\(id)?exp="))

        let reply = try server.send("GET", url)
        #expect(reply.status == 200)
        #expect(reply.body == RealFiles.png3x2)
        #expect(reply.header("Content-Type") == "image/png")
        let cache = try #require(reply.header("Cache-Control"))
        let maxAge = try #require(Int(cache.replacingOccurrences(of: "public, max-age=", with: "")))
        #expect((3_500...3_600).contains(maxAge), "\(cache)")
        let etag = try #require(reply.header("ETag"))
        #expect(try server.send("GET", url, headers: [("If-None-Match", etag)]).status == 304)
        let range = try server.send("GET", url, headers: [("Range", "bytes=0-7")])
        #expect(range.status == 206)
        #expect(range.body == Array(RealFiles.png3x2.prefix(8)))
        // The list signs too, and a signature is never the user's token.
        let list = try ImageScenarios.get(server, account.token, "/users/me/images")
        #expect(list.json["images"]?[0]?["signedUrl"]?.stringValue?.hasPrefix("/images/\(id)?exp=") == true)

        let expired = server.app.signer.url(for: UUID(uuidString: id)!, now: Int(Date().timeIntervalSince1970) - 3_601)
        let refused = try server.send("GET", expired)
        #expect(refused.status == 403)
        #expect(refused.json["code"] == "invalid_signature")
    }

    @Test func aTamperedOrBorrowedSignatureIsRefused() throws {
        let server = try TestServer("signedtamper")
        defer { server.shutdown() }
        let account = try server.register()
        let first = try Self.upload(server, account)
        let second = try Self.upload(server, account, RealFiles.gif3x2, type: "image/gif")
        let url = try #require(first["signedUrl"]?.stringValue)
        let secondID = try #require(second["id"]?.stringValue)
        let query = String(url[url.firstIndex(of: "?")!...])
        let exp = Int(query.split(separator: "&")[0].dropFirst(5))!
        var flipped = Array(url)
        flipped[flipped.count - 1] = flipped.last == "A" ? "B" : "A"
        for target in [
            "/images/\(secondID)\(query)",  // another image's signature
            String(flipped),  // a changed signature
            url.replacingOccurrences(of: "exp=\(exp)", with: "exp=\(exp + 3_600)"),  // a later expiry
            url.replacingOccurrences(of: "&sig=", with: "&sig=9"),  // an unknown key
            "/images/\(secondID)", "/images/\(secondID)?exp=\(exp)", "/images/not-an-id\(query)",
            url.replacingOccurrences(of: "exp=\(exp)", with: "exp=99999999999999999999"),
        ] {
            let reply = try server.send("GET", target)
            #expect(reply.status == 403, "\(target)")
            #expect(reply.json["code"] == "invalid_signature", "\(target)")
        }
        // A deleted image's still-valid URL finds nothing.
        let id = try #require(first["id"]?.stringValue)
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(id)", method: "DELETE").status == 204)
        #expect(try server.send("GET", url).status == 404)
    }

    @Test func urlsSignedBeforeARotationKeepWorkingOnEveryInstance() throws {
        let first = try TestServer("signedrotate1")
        defer { first.shutdown() }
        let account = try first.register()
        let before = try #require(try Self.upload(first, account)["signedUrl"]?.stringValue)
        let oldKey = try #require(before.split(separator: "&").first { $0.hasPrefix("sig=") }?.dropFirst(4).split(separator: ".").first)

        // `exosphere keys rotate`, as an operator runs it.
        let rotate = try ExosphereProcessTests.run(["keys", "rotate", "--database-url", first.databaseURL, "--log-level", "warning"])
        #expect(rotate.waitForExit(timeout: 30))
        #expect(rotate.exitCode == 0, "\(rotate.stderr)")

        // An instance started after the rotation signs with the new key; the first, which read
        // the keys before it, verifies that URL by reading them again at once.
        let second = try TestServer("signedrotate2", sharingDatabaseWith: first)
        defer { second.shutdown() }
        let after = try #require(
            try ImageScenarios.get(second, account.token, "/users/me/images").json["images"]?[0]?["signedUrl"]?.stringValue)
        let newKey = try #require(after.split(separator: "&").first { $0.hasPrefix("sig=") }?.dropFirst(4).split(separator: ".").first)
        #expect(newKey != oldKey)
        for server in [first, second] {
            #expect(try server.send("GET", after).status == 200)
            // Signed with the retired key: still good until it expires.
            #expect(try server.send("GET", before).status == 200)
        }
    }

    /// The signature covers the rendition: `signedUrl` opens the original only, each of
    /// `signedThumbnails` its own size only. A leaked thumbnail URL stripped of its size, or given
    /// another, is refused, and so is the original's URL with a size added.
    @Test func aSignedURLOpensOnlyTheRenditionItWasSignedFor() throws {
        let server = try TestServer("signedrendition")
        defer { server.shutdown() }
        let account = try server.register()
        let photo = try TestImages.encode(TestImages.marked(width: 640, height: 480), as: ".jpg[Q=85]")
        let image = try Self.upload(server, account, photo, type: "image/jpeg")
        let original = try #require(image["signedUrl"]?.stringValue)
        let thumbnails = try #require(image["signedThumbnails"]?.objectValue)
        #expect(Set(thumbnails.keys) == ["128", "256", "512", "1024"])
        let small = try #require(thumbnails["256"]?.stringValue)
        #expect(small.contains("&size=256&sig=") && small.hasPrefix(String(original[..<original.range(of: "&sig=")!.lowerBound])))
        for _ in 0..<2 {  // made, then from memory
            let reply = try server.send("GET", small, headers: [("Accept", "image/webp")])
            #expect(reply.status == 200 && reply.header("Content-Type") == "image/webp", "\(reply.status) \(reply.text.prefix(200))")
        }
        let withoutSize = small.replacingOccurrences(of: "&size=256", with: "")
        for target in [withoutSize, small.replacingOccurrences(of: "size=256", with: "size=1024"), original + "&size=256", original + "&size=x"] {
            let reply = try server.send("GET", target)
            #expect(reply.status == 403 && reply.json["code"] == "invalid_signature", "\(target): \(reply.status)")
        }
        let whole = try server.send("GET", original)
        #expect(whole.status == 200 && whole.body == photo)
    }

    /// `exosphere keys revoke KEY_ID` ends a key at once: within 5 seconds every instance refuses
    /// the URLs it signed, also one that has signed nothing since and serves the thumbnail from
    /// memory; a new key signs, and its URLs work.
    @Test func aRevokedKeyIsRefusedByEveryInstanceWithinSeconds() throws {
        let first = try TestServer("signedrevoke1")
        defer { first.shutdown() }
        let second = try TestServer("signedrevoke2", sharingDatabaseWith: first)
        defer { second.shutdown() }
        let account = try first.register()
        let image = try Self.upload(
            first, account, try TestImages.encode(TestImages.marked(width: 320, height: 240), as: ".jpg[Q=85]"), type: "image/jpeg")
        let urls = [try #require(image["signedUrl"]?.stringValue), try #require(image["signedThumbnails"]?["128"]?.stringValue)]
        for server in [first, second] {
            for url in urls + [urls[1]] { #expect(try server.send("GET", url).status == 200, "\(url)") }
        }
        let key = try #require(urls[0].split(separator: "&").first { $0.hasPrefix("sig=") }?.dropFirst(4).split(separator: ".").first)

        let revoke = try ExosphereProcessTests.run(["keys", "revoke", String(key), "--database-url", first.databaseURL, "--log-level", "warning"])
        #expect(revoke.waitForExit(timeout: 30))
        #expect(revoke.exitCode == 0, "\(revoke.stderr)")
        let revoked = ContinuousClock.now
        let audited = try first.withDatabase { connection in
            try connection.query("SELECT action FROM admin_audit WHERE action LIKE 'cli.keys.%' ORDER BY id").map {
                try $0.decode(String.self, at: 0)
            }
        }
        #expect(audited.last == "cli.keys.revoke \(key)", "the command is in the audit log: \(audited)")
        try waitUntil(timeout: .seconds(5), "both instances to refuse the revoked key's URLs") {
            try [first, second].allSatisfy { server in try urls.allSatisfy { try server.send("GET", $0).status == 403 } }
        }
        print("SignedURLAPITests: a revoked key refused by both instances after \(ContinuousClock.now - revoked)")
        // It was the signing key: a new one signs, on the instance that never rotated too.
        let fresh = try #require(
            try ImageScenarios.get(second, account.token, "/users/me/images").json["images"]?[0]?["signedUrl"]?.stringValue)
        #expect(!fresh.contains("sig=\(key)."))
        for server in [first, second] { #expect(try server.send("GET", fresh).status == 200) }

        let unknown = try ExosphereProcessTests.run(["keys", "revoke", "999999", "--database-url", first.databaseURL, "--log-level", "warning"])
        #expect(unknown.waitForExit(timeout: 30))
        #expect(unknown.exitCode == 1 && unknown.stderr.contains("no key 999999"), "\(unknown.stderr)")
    }
}
