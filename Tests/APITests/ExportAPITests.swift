import API
import Cryptography
import Foundation
import Images
import JSON
import TestSupport
import Testing

/// `GET /users/me/export` (`../shared/API.md`, "Data export"), read back with Python's `zipfile`:
/// every original byte for byte, from either storage, and `user.json` whole.
@Suite(.testThreads, .serialized)
struct ExportAPITests {
    /// What Python's `zipfile` makes of an archive: its entry names, `testzip()` (the first entry
    /// whose CRC is wrong, or None), each entry's SHA-256, and `user.json` parsed.
    static let reader = """
        import hashlib, json, sys, zipfile
        with zipfile.ZipFile(sys.argv[1]) as archive:
            names = archive.namelist()
            print(json.dumps({
                "names": names,
                "bad": archive.testzip(),
                "sha256": {name: hashlib.sha256(archive.read(name)).hexdigest() for name in names},
                "user": json.loads(archive.read("user.json")),
            }))
        """

    @Test(arguments: [ImageStorage.database, .filesystem])
    func theExportHoldsTheProfileAndEveryOriginalByteForByte(_ storage: ImageStorage) throws {
        let smtp = try TestSMTPServer()
        let server = try RecoveryAPITests.server("export_\(storage.rawValue)", smtp: smtp) { configuration in
            configuration.images.storage = storage
            if storage == .filesystem { configuration.images.directory = try makeTemporaryDirectory("exo-export") }
            configuration.thumbnails.helpers = 0
        }
        defer { server.shutdown() }
        let account = try server.register(extra: #", "firstname": "Ayu", "data": {"height": 177.5, "city": "Surabaya"}"#)
        // Several chunks' worth (the server reads 256 KiB at a time) and small ones.
        let originals = [
            ("image/png", ImageScenarios.png(size: 700_000, seed: 3)), ("image/png", RealFiles.png3x2),
            ("image/jpeg", RealFiles.jpeg5x3), ("image/png", ImageScenarios.png(size: 300_000, seed: 9)),
        ]
        var ids: [String: [UInt8]] = [:]
        for (type, bytes) in originals {
            let reply = try ImageScenarios.upload(server, account.token, type, bytes)
            try #require(reply.status == 201, "\(reply.text)")
            ids[try #require(reply.json["id"]?.stringValue)] = bytes
        }

        // HEAD costs nothing: no count, no build, so no length (the archive is not laid out).
        let head = try server.send("HEAD", "/users/me/export", headers: [("Authorization", "Bearer \(account.token)")])
        #expect(head.status == 200)
        #expect(head.header("Content-Type") == "application/zip" && head.header("Content-Length") == nil)
        let export = try server.send("GET", "/users/me/export", headers: [("Authorization", "Bearer \(account.token)")])
        try #require(export.status == 200, "\(export.text)")
        #expect(export.header("Content-Type") == "application/zip")
        #expect(export.header("Content-Disposition")?.hasPrefix("attachment; filename=\"exosphere-export-") == true)
        #expect(export.header("Content-Length") == String(export.body.count))

        let directory = try makeTemporaryDirectory("exo-export-read")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(export.body).write(to: URL(fileURLWithPath: directory + "/export.zip"))
        try Data(Self.reader.utf8).write(to: URL(fileURLWithPath: directory + "/read.py"))
        let read = try JSONParser.parse(try run("/usr/bin/python3", [directory + "/read.py", directory + "/export.zip"]))
        #expect(read["bad"] == .null, "testzip found a bad CRC")
        #expect(Set(read["names"]?.arrayValue?.compactMap(\.stringValue) ?? []).count == ids.count + 1)
        for (id, bytes) in ids {
            let name = try #require(read["names"]?.arrayValue?.compactMap(\.stringValue).first { $0.hasPrefix("images/\(id).") }, "\(id)")
            #expect(read["sha256"]?[name]?.stringValue == Hex.encode(SHA256.hash(bytes)), "\(name) is the original byte for byte")
        }
        let user = try #require(read["user"])
        #expect(user["user"]?["email"]?.stringValue == account.email)
        #expect(user["user"]?["data"]?["city"] == "Surabaya")
        #expect(user["images"]?.arrayValue?.count == ids.count)
        #expect(user["sessions"]?.arrayValue?.contains { $0["current"] == .bool(true) } == true)
        #expect(user["activity"]?["events"]?.arrayValue?.contains { $0["type"] == "data_exported" } == true)

        // Once an hour; HEAD counted nothing, the export did, and HEAD now answers as GET would.
        let again = try server.send("GET", "/users/me/export", headers: [("Authorization", "Bearer \(account.token)")])
        #expect(again.status == 429)
        #expect((Int(again.header("Retry-After") ?? "") ?? 0) > 3000)
        let headAgain = try server.send("HEAD", "/users/me/export", headers: [("Authorization", "Bearer \(account.token)")])
        #expect(headAgain.status == 429 && (Int(headAgain.header("Retry-After") ?? "") ?? 0) > 3000)
        let events = try server.call("GET", "/users/me/activity", token: account.token).json["events"]?.arrayValue ?? []
        #expect(events.filter { $0["type"] == "data_exported" }.count == 1)
        let notice = try smtp.waitForMessages(where: { RecoveryAPITests.isTo(account.email)($0) && $0.contains("was just downloaded") })
        #expect(notice.count == 1)
        #expect(try server.send("GET", "/users/me/export").status == 401)
    }
}
