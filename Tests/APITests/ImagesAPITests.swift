@testable import API
import Files
import FoundationEssentials
import Glibc
import TestSupport
import Images
import JSON
import Postgres
import Cryptography
import Synchronization
import Testing

/// The images API, run in full against each storage: the same scenarios, the same expectations.
enum ImageScenarios {
    /// The upload limit of the test servers: small, so the over-limit cases stay cheap.
    static let maxBytes = 256 * 1024

    /// One valid image of each format, with its size in pixels.
    static let samples: [(type: String, bytes: [UInt8], width: Int, height: Int)] = [
        ("image/png", RealFiles.png3x2, 3, 2),
        ("image/gif", RealFiles.gif3x2, 3, 2),
        ("image/jpeg", RealFiles.jpeg5x3, 5, 3),
        ("image/webp", Build.vp8x(width: 640, height: 480), 640, 480),
        ("image/heic", Build.heic(width: 4032, height: 3024), 4032, 3024),
    ]

    static func upload(_ server: TestServer, _ token: String, _ type: String, _ bytes: [UInt8]) throws -> Reply {
        try server.send("POST", "/users/me/images", headers: [("Authorization", "Bearer \(token)"), ("Content-Type", type)], body: bytes)
    }

    static func get(
        _ server: TestServer, _ token: String, _ target: String, _ headers: [(String, String)] = [],
        method: String = "GET"
    ) throws -> Reply {
        try server.send(method, target, headers: [("Authorization", "Bearer \(token)")] + headers)
    }

    /// A PNG of `size` bytes: a real 1×1 header, then an ancillary chunk of filler (still a valid PNG).
    static func png(size: Int, seed: UInt8 = 7) -> [UInt8] {
        let head = Build.png(width: 1, height: 1)
        let filler = max(0, size - head.count - 12)
        let data = (0..<filler).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
        let chunk = Build.pngChunk("tEXt", data)
        var bytes = Array(head.dropLast(12))  // before IEND
        bytes += chunk
        bytes += head.suffix(12)
        return bytes
    }

    // MARK: - Scenarios

    static func everyFormatRoundTrips(_ server: TestServer) throws {
        let account = try server.register()
        for sample in samples {
            let created = try upload(server, account.token, sample.type, sample.bytes)
            try #require(created.status == 201, "\(sample.type): \(created.status) \(created.text)")
            let json = created.json
            let id = try #require(json["id"]?.stringValue)
            #expect(created.header("Location") == "/users/me/images/\(id)")
            #expect(json["url"]?.stringValue == "/users/me/images/\(id)")
            #expect(json["contentType"]?.stringValue == sample.type)
            #expect(json["byteSize"]?.numberValue?.text == String(sample.bytes.count))
            #expect(json["width"]?.numberValue?.text == String(sample.width))
            #expect(json["height"]?.numberValue?.text == String(sample.height))
            #expect(json["sha256"]?.stringValue == SHA256.hexDigest(sample.bytes))
            #expect(json["createdAt"]?.stringValue.flatMap(epochMilliseconds) != nil)

            let downloaded = try get(server, account.token, "/users/me/images/\(id)")
            #expect(downloaded.status == 200)
            #expect(same(downloaded.body, sample.bytes), "\(sample.type) comes back byte-identical")
            #expect(downloaded.header("Content-Type") == sample.type)
            #expect(downloaded.header("ETag") == "\"\(SHA256.hexDigest(sample.bytes))\"")
            #expect(downloaded.header("Cache-Control")?.hasPrefix("private") == true)
            #expect(downloaded.header("Accept-Ranges") == "bytes")
            #expect(downloaded.header("X-Content-Type-Options") == "nosniff")

            let head = try get(server, account.token, "/users/me/images/\(id)", method: "HEAD")
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(head.header("Content-Length") == String(sample.bytes.count))
        }
    }

    static func aLargerImageRoundTrips(_ server: TestServer) throws {
        let account = try server.register()
        let bytes = png(size: maxBytes, seed: 3)
        let created = try upload(server, account.token, "image/png", bytes)
        try #require(created.status == 201, "\(created.status) \(created.text)")
        let id = try #require(created.json["id"]?.stringValue)
        let downloaded = try get(server, account.token, "/users/me/images/\(id)")
        #expect(downloaded.status == 200)
        #expect(downloaded.body.count == bytes.count)
        #expect(same(downloaded.body, bytes))
    }

    /// The ids of every page of the user's list with `query` (which holds a `limit`), following
    /// `next` to the end, and how many pages there were; no page holds more than the limit.
    static func pagedIDs(_ server: TestServer, _ token: String, _ query: String) throws -> (ids: [String], pages: Int) {
        let limit = try #require(query.split(separator: "&").first { $0.hasPrefix("limit=") }.flatMap { Int($0.dropFirst(6)) })
        var ids: [String] = []
        var target = "/users/me/images?" + query
        var pages = 0
        while true {
            let page = try get(server, token, target)
            try #require(page.status == 200, "\(target): \(page.status) \(page.text)")
            let items = try #require(page.json["images"]?.arrayValue)
            #expect(items.count <= limit)
            ids += items.compactMap { $0["id"]?.stringValue }
            pages += 1
            guard let next = page.json["next"]?.stringValue else { return (ids, pages) }
            target = "/users/me/images?\(query)&after=\(next)"
            try #require(pages < 10)
        }
    }

    static func listsOldestFirstWithPagination(_ server: TestServer) throws {
        let account = try server.register()
        var ids: [String] = []
        for index in 0..<7 {
            let created = try upload(server, account.token, "image/png", png(size: 100 + index, seed: UInt8(index)))
            try #require(created.status == 201)
            ids.append(try #require(created.json["id"]?.stringValue))
        }
        let all = try get(server, account.token, "/users/me/images")
        #expect(all.status == 200)
        #expect(all.json["images"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ids)
        #expect(all.json["next"] == .null)

        let (seen, pages) = try pagedIDs(server, account.token, "limit=3")
        #expect(seen == ids)
        #expect(pages == 3)

        // An exact multiple: the last full page still says whether more follow.
        let two = try get(server, account.token, "/users/me/images?limit=7")
        #expect(two.json["images"]?.arrayValue?.count == 7)
        #expect(two.json["next"] == .null)
    }

    /// `order=newest`: the reverse of the upload order, paged by the server with cursors that
    /// continue in that order; `order=oldest` is the default's order.
    static func listsNewestFirstWithPagination(_ server: TestServer) throws {
        let account = try server.register()
        var ids: [String] = []
        for index in 0..<5 {
            let created = try upload(server, account.token, "image/png", png(size: 100 + index, seed: UInt8(50 + index)))
            try #require(created.status == 201)
            ids.append(try #require(created.json["id"]?.stringValue))
        }
        let (seen, pages) = try pagedIDs(server, account.token, "order=newest&limit=2")
        #expect(seen == ids.reversed())
        #expect(pages == 3)
        let oldest = try get(server, account.token, "/users/me/images?order=oldest")
        #expect(oldest.json["images"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ids)
    }

    static func badListParameters(_ server: TestServer) throws {
        let account = try server.register()
        for query in ["limit=0", "limit=101", "limit=abc", "limit=-1", "limit=1.5", "limit="] {
            let reply = try get(server, account.token, "/users/me/images?\(query)")
            #expect(reply.status == 422, "\(query)")
            #expect(reply.code == "invalid_limit", "\(query)")
        }
        for cursor in [
            "abc", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "%00", String(repeating: "A", count: 33), String(repeating: "A", count: 31) + "=",
            String(repeating: "_", count: 32),
        ] {
            let reply = try get(server, account.token, "/users/me/images?after=\(cursor)")
            #expect(reply.status == 422, "\(cursor)")
            #expect(reply.code == "invalid_cursor", "\(cursor)")
        }
        for order in ["", "NEWEST", "latest", "desc", "newest,oldest"] {
            let reply = try get(server, account.token, "/users/me/images?order=\(order)")
            #expect(reply.status == 422 && reply.code == "invalid_order", "order=\(order): \(reply.status) \(reply.text)")
        }
        #expect(try get(server, account.token, "/users/me/images?limit=1").status == 200)
        #expect(try get(server, account.token, "/users/me/images?limit=100").status == 200)
    }

    static func conditionalRequestsAndRanges(_ server: TestServer) throws {
        let account = try server.register()
        let bytes = png(size: 1000, seed: 9)
        let created = try upload(server, account.token, "image/png", bytes)
        let id = try #require(created.json["id"]?.stringValue)
        let url = "/users/me/images/\(id)"
        let etag = try #require(try get(server, account.token, url).header("ETag"))

        let notModified = try get(server, account.token, url, [("If-None-Match", etag)])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)
        #expect(notModified.header("ETag") == etag)
        #expect(try get(server, account.token, url, [("If-None-Match", "W/\(etag)")]).status == 304)
        #expect(try get(server, account.token, url, [("If-None-Match", "\"other\", \(etag)")]).status == 304)
        #expect(try get(server, account.token, url, [("If-None-Match", "*")]).status == 304)
        #expect(try get(server, account.token, url, [("If-None-Match", "\"other\"")]).status == 200)

        let first = try get(server, account.token, url, [("Range", "bytes=0-9")])
        #expect(first.status == 206)
        #expect(same(first.body, Array(bytes[0..<10])))
        #expect(first.header("Content-Range") == "bytes 0-9/1000")
        #expect(first.header("Content-Length") == "10")

        let middle = try get(server, account.token, url, [("Range", "bytes=500-599")])
        #expect(middle.status == 206)
        #expect(same(middle.body, Array(bytes[500..<600])))

        let suffix = try get(server, account.token, url, [("Range", "bytes=-5")])
        #expect(suffix.status == 206)
        #expect(same(suffix.body, Array(bytes[995...])))
        #expect(suffix.header("Content-Range") == "bytes 995-999/1000")

        let open = try get(server, account.token, url, [("Range", "bytes=990-")])
        #expect(same(open.body, Array(bytes[990...])))
        let clamped = try get(server, account.token, url, [("Range", "bytes=990-5000")])
        #expect(clamped.status == 206)
        #expect(same(clamped.body, Array(bytes[990...])))

        for bad in ["bytes=1000-", "bytes=2000-3000", "bytes=-0", "bytes=9-3", "bytes=abc"] {
            let reply = try get(server, account.token, url, [("Range", bad)])
            #expect(reply.status == 416, "\(bad)")
            #expect(reply.header("Content-Range") == "bytes */1000", "\(bad)")
        }
        // Another unit is ignored; so is a Range whose If-Range names other bytes.
        #expect(same(try get(server, account.token, url, [("Range", "items=0-1")]).body, bytes))
        let stale = try get(server, account.token, url, [("Range", "bytes=0-9"), ("If-Range", "\"stale\"")])
        #expect(stale.status == 200)
        #expect(same(stale.body, bytes))
        let fresh = try get(server, account.token, url, [("Range", "bytes=0-9"), ("If-Range", etag)])
        #expect(fresh.status == 206)
    }

    static func deleteRemovesTheImage(_ server: TestServer) throws {
        let account = try server.register()
        let created = try upload(server, account.token, "image/gif", RealFiles.gif3x2)
        let id = try #require(created.json["id"]?.stringValue)
        let url = "/users/me/images/\(id)"
        #expect(try server.call("DELETE", url, token: account.token).status == 204)
        let gone = try get(server, account.token, url)
        #expect(gone.status == 404)
        #expect(gone.code == "image_not_found")
        #expect(try server.call("DELETE", url, token: account.token).status == 404)
        #expect(try get(server, account.token, "/users/me/images").json["images"]?.arrayValue?.isEmpty == true)
        let rows = try server.withDatabase {
            try $0.query("SELECT count(*) FROM image_data WHERE image_id = \(UUID(uuidString: id)!)")[0].decode(Int.self, at: 0)
        }
        #expect(rows == 0)
        #expect(ImageScenarios.fileExists(server, id) == false)
    }

    static func refusesWhatIsNotAnImage(_ server: TestServer) throws {
        let account = try server.register()
        func expect(_ type: String, _ bytes: [UInt8], _ status: Int, _ code: String?, _ comment: Comment) throws {
            let reply = try upload(server, account.token, type, bytes)
            #expect(reply.status == status, comment)
            if let code { #expect(reply.code == code, comment) }
        }
        try expect("image/jpeg", RealFiles.png3x2, 422, "content_mismatch", "PNG bytes declared as JPEG")
        try expect("image/png", Array("GIF89a but not really".utf8), 422, "content_mismatch", "wrong magic bytes")
        try expect("image/png", [], 422, "empty_image", "zero bytes")
        try expect("image/png", Array(RealFiles.png3x2.prefix(20)), 422, "truncated", "a truncated header")
        try expect("image/png", Build.png(width: 100_000, height: 100_000), 422, "too_many_pixels", "absurd dimensions")
        try expect("image/gif", Build.gif(width: 0, height: 10), 422, "invalid_dimensions", "zero width")
        try expect("text/plain", RealFiles.png3x2, 415, "unsupported_media_type", "not an image type")
        try expect("image/svg+xml", Array("<svg/>".utf8), 415, "unsupported_media_type", "an unsupported image type")
        let missing = try server.send("POST", "/users/me/images", headers: [("Authorization", "Bearer \(account.token)")], body: RealFiles.png3x2)
        #expect(missing.status == 415, "no Content-Type")
        #expect(try upload(server, "not-a-token", "image/png", RealFiles.png3x2).status == 401)
        #expect(try get(server, account.token, "/users/me/images").json["images"]?.arrayValue?.isEmpty == true, "nothing was stored")
    }

    static func refusesTooLargeBodies(_ server: TestServer) throws {
        let account = try server.register()
        let big = png(size: maxBytes + 1)
        // Announced by Content-Length: refused before the body is read.
        let announced = try server.send(
            "POST", "/users/me/images",
            headers: [
                ("Authorization", "Bearer \(account.token)"), ("Content-Type", "image/png"),
                ("Content-Length", String(maxBytes + ImagesController.multipartOverhead + 1)),
            ],
            body: [])
        #expect(announced.status == 413)
        let exact = try upload(server, account.token, "image/png", big)
        #expect(exact.status == 413)
        // Streamed without a length: refused once the running count passes the limit.
        let huge = png(size: maxBytes + ImagesController.multipartOverhead + 4096)
        var chunked: [UInt8] = []
        var offset = 0
        while offset < huge.count {
            let piece = min(16_384, huge.count - offset)
            chunked += Array(String(piece, radix: 16).utf8) + [13, 10] + huge[offset..<(offset + piece)] + [13, 10]
            offset += piece
        }
        chunked += Array("0\r\n\r\n".utf8)
        let streamed = try server.send(
            "POST", "/users/me/images",
            headers: [
                ("Authorization", "Bearer \(account.token)"), ("Content-Type", "image/png"),
                ("Transfer-Encoding", "chunked"),
            ], body: chunked)
        #expect(streamed.status == 413)
        // A chunked body within the limit is fine.
        let small = png(size: 3000)
        let smallChunked = Array("bb8\r\n".utf8) + small + Array("\r\n0\r\n\r\n".utf8)
        let accepted = try server.send(
            "POST", "/users/me/images",
            headers: [
                ("Authorization", "Bearer \(account.token)"), ("Content-Type", "image/png"),
                ("Transfer-Encoding", "chunked"),
            ], body: smallChunked)
        #expect(accepted.status == 201, "\(accepted.status) \(accepted.text)")
        #expect(try get(server, account.token, "/users/me/images").json["images"]?.arrayValue?.count == 1)
    }

    static func multipartUploads(_ server: TestServer) throws {
        let account = try server.register()
        let boundary = "------------------------exo\(UInt32.random(in: 0...UInt32.max))"
        func multipart(_ parts: [(headers: String, body: [UInt8])]) -> [UInt8] {
            var body: [UInt8] = []
            for part in parts {
                body += Array("--\(boundary)\r\n\(part.headers)\r\n\r\n".utf8) + part.body + Array("\r\n".utf8)
            }
            return body + Array("--\(boundary)--\r\n".utf8)
        }
        func post(_ body: [UInt8]) throws -> Reply {
            try server.send(
                "POST", "/users/me/images",
                headers: [
                    ("Authorization", "Bearer \(account.token)"),
                    ("Content-Type", "multipart/form-data; boundary=\(boundary)"),
                ], body: body)
        }
        let jpeg = RealFiles.jpeg5x3
        let created = try post(
            multipart([
                ("Content-Disposition: form-data; name=\"caption\"", Array("holiday".utf8)),
                ("Content-Disposition: form-data; name=\"file\"; filename=\"../../etc/passwd\"\r\nContent-Type: image/jpeg", jpeg),
            ]))
        try #require(created.status == 201, "\(created.status) \(created.text)")
        let id = try #require(created.json["id"]?.stringValue)
        #expect(created.json["contentType"]?.stringValue == "image/jpeg")
        #expect(same(try get(server, account.token, "/users/me/images/\(id)").body, jpeg))

        // No type on the part: the bytes say what they are.
        let sniffed = try post(multipart([("Content-Disposition: form-data; name=\"file\"; filename=\"x\"", RealFiles.png3x2)]))
        #expect(sniffed.status == 201)
        #expect(sniffed.json["contentType"]?.stringValue == "image/png")

        let noFile = try post(multipart([("Content-Disposition: form-data; name=\"caption\"", Array("no file".utf8))]))
        #expect(noFile.status == 422)
        #expect(noFile.code == "no_file_part")
        let mismatch = try post(multipart([("Content-Disposition: form-data; name=\"file\"; filename=\"a.gif\"\r\nContent-Type: image/gif", jpeg)]))
        #expect(mismatch.status == 422)
        #expect(mismatch.code == "content_mismatch")
        let unterminated = try post(Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n".utf8) + jpeg)
        #expect(unterminated.status == 400)
        let tooBig = try post(
            multipart([
                (
                    "Content-Disposition: form-data; name=\"file\"; filename=\"big.png\"\r\nContent-Type: image/png",
                    png(size: maxBytes + 1)
                )
            ]))
        #expect(tooBig.status == 413)
        #expect(tooBig.code == "image_too_large")
        #expect(try get(server, account.token, "/users/me/images").json["images"]?.arrayValue?.count == 2)
    }

    static func othersImagesAreInvisible(_ server: TestServer) throws {
        let owner = try server.register()
        let other = try server.register()
        let created = try upload(server, owner.token, "image/png", RealFiles.png3x2)
        let id = try #require(created.json["id"]?.stringValue)
        let url = "/users/me/images/\(id)"
        let read = try get(server, other.token, url)
        #expect(read.status == 404)
        #expect(read.code == "image_not_found")
        #expect(try get(server, other.token, url, method: "HEAD").status == 404)
        #expect(try server.call("DELETE", url, token: other.token).status == 404)
        #expect(try get(server, other.token, "/users/me/images").json["images"]?.arrayValue?.isEmpty == true)
        // Unknown and malformed ids look the same.
        #expect(try get(server, other.token, "/users/me/images/\(UUID().uuidString.lowercased())").status == 404)
        #expect(try get(server, other.token, "/users/me/images/not-a-uuid").status == 404)
        #expect(try get(server, other.token, "/users/me/images/..%2F..%2Fetc%2Fpasswd").status == 404)
        #expect(try get(server, owner.token, url).status == 200, "the owner still has it")
        #expect(try get(server, "bogus", url).status == 401)
    }

    static func deletingTheAccountDeletesItsImages(_ server: TestServer) throws {
        let account = try server.register()
        var ids: [String] = []
        for sample in samples.prefix(3) {
            ids.append(try #require(try upload(server, account.token, sample.type, sample.bytes).json["id"]?.stringValue))
        }
        let deleted = try server.call("DELETE", "/users/me", token: account.token, json: #"{"password": \#(jsonString(account.password))}"#)
        #expect(deleted.status == 204, "\(deleted.status) \(deleted.text)")
        let userID = UUID(uuidString: account.id)!
        let rows = try server.withDatabase { try $0.query("SELECT count(*) FROM images WHERE user_id = \(userID)")[0].decode(Int.self, at: 0) }
        #expect(rows == 0)
        for id in ids { #expect(ImageScenarios.fileExists(server, id) == false) }
    }

    static func concurrentUploadsAllLand(_ server: TestServer) throws {
        let account = try server.register()
        let statuses = Mutex<[Int]>([])
        onThreads(8) { index in
            for round in 0..<3 {
                let status = (try? upload(server, account.token, "image/png", png(size: 5000 + index * 10 + round, seed: UInt8(index))))?.status ?? -1
                statuses.withLock { $0.append(status) }
            }
        }
        #expect(statuses.withLock { $0 } == Array(repeating: 201, count: 24))
        let listed = try get(server, account.token, "/users/me/images?limit=100")
        #expect(listed.json["images"]?.arrayValue?.count == 24)
    }

    static func metricsCountTheStoredBytes(_ server: TestServer) throws {
        let account = try server.register()
        #expect(try upload(server, account.token, "image/png", png(size: 4321)).status == 201)
        let storage = server.app.configuration.images.storage.rawValue
        let (count, bytes) = try server.withDatabase { connection in
            let row = try connection.query("SELECT count(*), coalesce(sum(byte_size), 0)::int8 FROM images")[0]
            return (try row.decode(Int.self, at: 0), try row.decode(Int.self, at: 1))
        }
        let text = try server.send("GET", "/metrics").text
        func sample(_ name: String) -> String? {
            let prefix = "\(name){storage=\"\(storage)\"} "
            return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
        }
        #expect(bytes >= 4321)
        #expect(sample("exosphere_image_bytes_stored") == String(bytes))
        #expect(sample("exosphere_images_stored") == String(count))
    }

    /// Whether the filesystem storage holds a file for this image id (false for the database storage).
    static func fileExists(_ server: TestServer, _ id: String) -> Bool {
        let configuration = server.app.configuration.images
        guard configuration.storage == .filesystem, let uuid = UUID(uuidString: id) else { return false }
        return access(ImageDirectory(root: configuration.directory).path(of: uuid), F_OK) == 0
    }
}

/// Byte-for-byte equality that, unlike `==` inside `#expect`, does not print megabytes when it fails.
func same(_ a: [UInt8], _ b: [UInt8]) -> Bool { a == b }

@Suite(
    .testThreads,
    .liveServer(
        "images_database",
        {
            $0.images.storage = .database; $0.images.maxBytes = ImageScenarios.maxBytes
        }), .serialized)
struct ImagesDatabaseStorageTests {
    let server: TestServer
    init() throws { server = try #require(TestServer.current) }

    @Test func everyFormatRoundTrips() throws { try ImageScenarios.everyFormatRoundTrips(server) }
    @Test func aLargerImageRoundTrips() throws { try ImageScenarios.aLargerImageRoundTrips(server) }
    @Test func listsOldestFirstWithPagination() throws { try ImageScenarios.listsOldestFirstWithPagination(server) }
    @Test func listsNewestFirstWithPagination() throws { try ImageScenarios.listsNewestFirstWithPagination(server) }
    @Test func badListParameters() throws { try ImageScenarios.badListParameters(server) }
    @Test func conditionalRequestsAndRanges() throws { try ImageScenarios.conditionalRequestsAndRanges(server) }
    @Test func deleteRemovesTheImage() throws { try ImageScenarios.deleteRemovesTheImage(server) }
    @Test func refusesWhatIsNotAnImage() throws { try ImageScenarios.refusesWhatIsNotAnImage(server) }
    @Test func refusesTooLargeBodies() throws { try ImageScenarios.refusesTooLargeBodies(server) }
    @Test func multipartUploads() throws { try ImageScenarios.multipartUploads(server) }
    @Test func othersImagesAreInvisible() throws { try ImageScenarios.othersImagesAreInvisible(server) }
    @Test func deletingTheAccountDeletesItsImages() throws { try ImageScenarios.deletingTheAccountDeletesItsImages(server) }
    @Test func concurrentUploadsAllLand() throws { try ImageScenarios.concurrentUploadsAllLand(server) }
    @Test func metricsCountTheStoredBytes() throws { try ImageScenarios.metricsCountTheStoredBytes(server) }
}

@Suite(
    .testThreads,
    .liveServer(
        "images_filesystem",
        {
            $0.images.storage = .filesystem
            $0.images.directory = try makeTemporaryDirectory("exo-images-suite")
            $0.images.maxBytes = ImageScenarios.maxBytes
        }), .serialized)
struct ImagesFilesystemStorageTests {
    let server: TestServer
    init() throws { server = try #require(TestServer.current) }

    @Test func everyFormatRoundTrips() throws { try ImageScenarios.everyFormatRoundTrips(server) }
    @Test func aLargerImageRoundTrips() throws { try ImageScenarios.aLargerImageRoundTrips(server) }
    @Test func listsOldestFirstWithPagination() throws { try ImageScenarios.listsOldestFirstWithPagination(server) }
    @Test func listsNewestFirstWithPagination() throws { try ImageScenarios.listsNewestFirstWithPagination(server) }
    @Test func badListParameters() throws { try ImageScenarios.badListParameters(server) }
    @Test func conditionalRequestsAndRanges() throws { try ImageScenarios.conditionalRequestsAndRanges(server) }
    @Test func deleteRemovesTheImage() throws { try ImageScenarios.deleteRemovesTheImage(server) }
    @Test func refusesWhatIsNotAnImage() throws { try ImageScenarios.refusesWhatIsNotAnImage(server) }
    @Test func refusesTooLargeBodies() throws { try ImageScenarios.refusesTooLargeBodies(server) }
    @Test func multipartUploads() throws { try ImageScenarios.multipartUploads(server) }
    @Test func othersImagesAreInvisible() throws { try ImageScenarios.othersImagesAreInvisible(server) }
    @Test func deletingTheAccountDeletesItsImages() throws { try ImageScenarios.deletingTheAccountDeletesItsImages(server) }
    @Test func concurrentUploadsAllLand() throws { try ImageScenarios.concurrentUploadsAllLand(server) }
    @Test func metricsCountTheStoredBytes() throws { try ImageScenarios.metricsCountTheStoredBytes(server) }

    /// Files are named by the server: two-hex-digit directories of lowercase UUIDs, nothing else.
    @Test func filesAreNamedByTheServer() throws {
        let account = try server.register()
        let created = try ImageScenarios.upload(server, account.token, "image/png", RealFiles.png3x2)
        let id = try #require(created.json["id"]?.stringValue)
        let root = server.app.configuration.images.directory
        let expected = "\(root)/\(id.prefix(2))/\(id)"
        #expect(access(expected, F_OK) == 0)
        #expect(same(try readFile(expected), RealFiles.png3x2))
        #expect(try FileSystem.entries(of: root + "/tmp").isEmpty, "no temporary file is left behind")
    }
}

/// `/metrics` counts images at most once per `totalsMaxAgeSeconds`: a scrape of a large deployment
/// must not read every image row.
@Suite(.testThreads, .liveServer("image_totals", { $0.images.totalsMaxAgeSeconds = 3_600 }))
struct ImageTotalsCacheTests {
    let server: TestServer
    init() throws { server = try #require(TestServer.current) }

    @Test func theCountIsReusedWithinItsMaximumAge() throws {
        func stored() throws -> String? {
            try server.send("GET", "/metrics").text.split(separator: "\n")
                .first { $0.hasPrefix(#"exosphere_images_stored{storage="database"} "#) }.map { String($0.split(separator: " ")[1]) }
        }
        let before = try stored()
        let account = try server.register()
        #expect(try ImageScenarios.upload(server, account.token, "image/png", ImageScenarios.png(size: 1234)).status == 201)
        #expect(try stored() == before, "counted again within the hour")
    }
}
