import API
import Files
import FoundationEssentials
import Glibc
import Images
import JSON
import Postgres
import Synchronization
import TestSupport
import Testing
import Thumbnails

/// Thumbnails end to end: made by helper processes, kept in the image's storage, negotiated by
/// `Accept`, cached, signed, placeholders, cleanup, the move between storages, hostile files.
@Suite(.testThreads, .serialized)
struct ThumbnailAPITests {
    static let upright = TestImages.marked(width: 1200, height: 800)
    /// Stored rotated, with EXIF orientation 6: the thumbnail must come out upright.
    static let photo: [UInt8] = TestImages.withOrientation(
        try! TestImages.encode(TestImages.stored(upright, orientation: 6), as: ".jpg[Q=90]"), 6)

    static func upload(_ server: TestServer, _ token: String, _ bytes: [UInt8] = photo, type: String = "image/jpeg") throws -> String {
        let reply = try ImageScenarios.upload(server, token, type, bytes)
        try #require(reply.status == 201, "\(reply.text)")
        return try #require(reply.json["id"]?.stringValue)
    }

    static func metadata(_ server: TestServer, _ token: String, _ id: String) throws -> JSONValue? {
        let list = try ImageScenarios.get(server, token, "/users/me/images?limit=100").json["images"]?.arrayValue ?? []
        return list.first { $0["id"]?.stringValue == id }
    }

    static func count(_ server: TestServer, _ sql: PostgresQuery) throws -> Int {
        try server.app.database.pool.withConnection { try $0.query(sql)[0].decode(Int.self, at: 0) }
    }

    @Test(arguments: [ImageStorage.database, .filesystem])
    func thumbnailsAreMadeKeptNegotiatedAndCached(storage: ImageStorage) throws {
        let server = try TestServer("thumbs_\(storage)") {
            $0.images.storage = storage
            $0.images.directory = try makeTemporaryDirectory("exo-thumbs")
        }
        defer { server.shutdown() }
        let account = try server.register()
        let id = try Self.upload(server, account.token)
        let uuid = try #require(UUID(uuidString: id))

        // The upload makes the 256 WebP and the placeholders in the background.
        try waitUntil("placeholders") { try Self.metadata(server, account.token, id)?["blurhash"]?.stringValue != nil }
        let image = try #require(try Self.metadata(server, account.token, id))
        #expect(Blurhash.isWellFormed(Array(try #require(image["blurhash"]?.stringValue).utf8)))
        #expect(image["dominantColor"]?.stringValue == "#fafafa" || image["dominantColor"]?.stringValue?.hasPrefix("#f") == true)
        #expect(try Self.count(server, "SELECT count(*) FROM image_thumbnails WHERE image_id = \(uuid)") == 1)

        let path = "/users/me/images/\(id)/thumbnail"
        let webp = try ImageScenarios.get(server, account.token, path + "?size=256", [("Accept", "image/avif,image/webp,*/*")])
        #expect(webp.status == 200)
        #expect(webp.header("Content-Type") == "image/webp")
        #expect(webp.header("Vary") == "Accept")
        #expect(webp.header("Cache-Control") == "private, max-age=31536000, immutable")
        let decoded = try TestImages.decode(webp.body)
        #expect(decoded.width == 256 && decoded.height == 171, "upright: \(decoded.width) × \(decoded.height)")
        #expect(decoded.at(20, 20).r > 180 && decoded.at(20, 20).b < 90, "top-left red")

        // JPEG when WebP is not acceptable; made on this first request and kept.
        for accept in ["image/jpeg", "image/webp;q=0, */*", "text/html, image/png"] {
            let jpeg = try ImageScenarios.get(server, account.token, path + "?size=512", [("Accept", accept)])
            #expect(jpeg.status == 200, "\(accept)")
            #expect(jpeg.header("Content-Type") == "image/jpeg", "\(accept)")
            #expect(jpeg.body.starts(with: [0xFF, 0xD8]), "\(accept)")
        }
        // No Accept header at all accepts anything; no size is 256.
        let plain = try ImageScenarios.get(server, account.token, path)
        #expect(plain.header("Content-Type") == "image/webp")
        #expect(plain.body == webp.body)
        #expect(try Self.count(server, "SELECT count(*) FROM image_thumbnails WHERE image_id = \(uuid)") == 2)
        if storage == .filesystem {
            let directory = ImageDirectory(root: server.app.configuration.images.directory)
            for spec in [ThumbnailSpec(size: 256, format: .webp), ThumbnailSpec(size: 512, format: .jpeg)] {
                #expect(FileManagerLike.exists(directory.thumbnailPath(of: uuid, spec)), "\(spec)")
            }
            #expect(try Self.count(server, "SELECT count(*) FROM image_thumbnails WHERE image_id = \(uuid) AND bytes IS NULL") == 2)
        }

        // Validators.
        let etag = try #require(webp.header("ETag"))
        let notModified = try ImageScenarios.get(server, account.token, path + "?size=256", [("If-None-Match", etag)])
        #expect(notModified.status == 304)
        #expect(notModified.body.isEmpty)

        // Sizes, other users, unknown ids.
        for bad in ["100", "0", "abc", "2048", "256x", "-128"] {
            let reply = try ImageScenarios.get(server, account.token, path + "?size=\(bad)")
            #expect(reply.status == 422, "\(bad)")
            #expect(reply.json["code"] == "invalid_size", "\(bad)")
        }
        let stranger = try server.register()
        #expect(try ImageScenarios.get(server, stranger.token, path).status == 404)
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(UUID())/thumbnail").status == 404)
        #expect(try server.send("GET", path).status == 401)

        // Deleting the image removes its thumbnails (rows and files).
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(id)", method: "DELETE").status == 204)
        #expect(try Self.count(server, "SELECT count(*) FROM image_thumbnails") == 0)
        if storage == .filesystem {
            let directory = ImageDirectory(root: server.app.configuration.images.directory)
            for spec in [ThumbnailSpec(size: 256, format: .webp), ThumbnailSpec(size: 512, format: .jpeg)] {
                #expect(!FileManagerLike.exists(directory.thumbnailPath(of: uuid, spec)), "\(spec)")
            }
        }
        #expect(try ImageScenarios.get(server, account.token, path).status == 404)
    }

    @Test func aSignedURLWithASizeServesThatThumbnailWithoutAToken() throws {
        let server = try TestServer("thumbs_signed")
        defer { server.shutdown() }
        let account = try server.register()
        let id = try Self.upload(server, account.token)
        // Each size has a URL of its own in the metadata: the size is signed.
        let url = try #require(try Self.metadata(server, account.token, id)?["signedThumbnails"]?["128"]?.stringValue)
        let reply = try server.send("GET", url, headers: [("Accept", "image/webp")])
        #expect(reply.status == 200)
        #expect(reply.header("Content-Type") == "image/webp")
        #expect(reply.header("Cache-Control")?.hasPrefix("public, max-age=") == true)
        #expect(reply.header("Vary") == "Accept")
        let decoded = try TestImages.decode(reply.body)
        #expect(decoded.width == 128 && decoded.height == 85)
        // Served again from memory: the same bytes, also as JPEG.
        #expect(try server.send("GET", url, headers: [("Accept", "image/webp")]).body == reply.body)
        #expect(try server.send("GET", url, headers: [("Accept", "image/jpeg")]).header("Content-Type") == "image/jpeg")
        // Another size, of the contract or not, is another rendition: its own URL, not this one.
        for size in ["1024", "100"] {
            let other = try server.send("GET", url.replacingOccurrences(of: "size=128", with: "size=\(size)"))
            #expect(other.status == 403 && other.json["code"] == "invalid_signature", "size=\(size): \(other.status)")
        }
        let tampered = try server.send("GET", url.replacingOccurrences(of: "&sig=", with: "&sig=9"))
        #expect(tampered.status == 403)
        #expect(tampered.json["code"] == "invalid_signature")
        // A deleted image's thumbnail is gone from this instance at once.
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(id)", method: "DELETE").status == 204)
        #expect(try server.send("GET", url).status == 404)
    }

    @Test func manyFirstRequestsAtOnceMakeOneThumbnail() throws {
        let server = try TestServer("thumbs_race")
        defer { server.shutdown() }
        let account = try server.register()
        let id = try Self.upload(server, account.token)
        let uuid = try #require(UUID(uuidString: id))
        let collected = Mutex<[Reply]>([])
        try onThreads(12) { _ in
            let reply = try ImageScenarios.get(server, account.token, "/users/me/images/\(id)/thumbnail?size=1024", [("Accept", "image/jpeg")])
            collected.withLock { $0.append(reply) }
        }
        let replies = collected.withLock { $0 }
        #expect(replies.count == 12)
        #expect(replies.allSatisfy { $0.status == 200 })
        #expect(Set(replies.map { $0.header("ETag") ?? "" }).count == 1)
        #expect(try Self.count(server, "SELECT count(*) FROM image_thumbnails WHERE image_id = \(uuid) AND size = 1024") == 1)
    }

    @Test func anUndecodableImageIsRefusedOnceAndRemembered() throws {
        let server = try TestServer("thumbs_undecodable")
        defer { server.shutdown() }
        let account = try server.register()
        // The header is whole, so the upload is accepted; the pixels stop halfway.
        let truncated = Array(Self.photo.prefix(Self.photo.count / 2))
        let id = try Self.upload(server, account.token, truncated)
        let reply = try ImageScenarios.get(server, account.token, "/users/me/images/\(id)/thumbnail?size=128")
        #expect(reply.status == 422)
        #expect(reply.json["code"] == "undecodable_image")
        let image = try #require(try Self.metadata(server, account.token, id))
        #expect(image["blurhash"] == .null)
        #expect(image["dominantColor"] == .null)
        // Remembered: no helper decodes it again.
        let helperJobs = try #require(server.app.thumbnailer).statistics
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(id)/thumbnail?size=512").json["code"] == "undecodable_image")
        #expect(try #require(server.app.thumbnailer).statistics == helperJobs)
        // The original is still served as uploaded.
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(id)").body == truncated)
    }

    /// A file that makes the decoder spin, uploaded and asked for at once by several clients,
    /// while others read their profiles: those answer as fast as ever, the spinning ones get 422,
    /// and the helpers go on making thumbnails.
    @Test func aSpinningFileHurtsNobodyElse() throws {
        let server = try TestServer("thumbs_spin") { $0.thumbnails.cpuSeconds = 1 }
        defer { server.shutdown() }
        let account = try server.register()
        let slow = try TestImages.slowPNG()
        // Registered first: under load a registration can outlast the upload's background decode,
        // which would leave nothing spinning for the requests below.
        let reader = try server.register()
        let spinning = try Self.upload(server, account.token, slow, type: "image/png")
        let pending = Atomic<Int>(3)
        // Profile reads that began and were answered while a helper was busy with the spinning
        // file (the upload's background decode, which the thumbnail requests wait for).
        let answeredDuringSpin = Atomic<Int>(0)
        let thumbnails = Mutex<[Int: Reply]>([:])
        try onThreads(5) { index in
            if index < 3 {
                // Counted down however the request ends (a client timeout throws), so that the
                // readers below always stop.
                defer { pending.subtract(1, ordering: .sequentiallyConsistent) }
                let reply = try ImageScenarios.get(
                    server, account.token, "/users/me/images/\(spinning)/thumbnail?size=\(ThumbnailSpec.sizes[index])")
                thumbnails.withLock { $0[index] = reply }
                return
            }
            while pending.load(ordering: .sequentiallyConsistent) > 0 {
                let spinningBefore = server.app.thumbnailer?.busyHelperPIDs.isEmpty == false
                let reply = try server.send("GET", "/users/me", headers: [("Authorization", "Bearer \(reader.token)")])
                if reply.status == 200, spinningBefore, server.app.thumbnailer?.busyHelperPIDs.isEmpty == false {
                    answeredDuringSpin.add(1, ordering: .sequentiallyConsistent)
                }
                usleep(10_000)  // the readers' pace, not a wait for anything
            }
        }
        let replies = thumbnails.withLock { Array($0.values) }
        #expect(replies.count == 3)
        for reply in replies {
            #expect(reply.status == 422, "\(reply.text)")
            #expect(reply.json["code"] == "undecodable_image")
        }
        // Reads were answered while the file spun, not after it: a request path that waited on
        // the decode (no worker left, a lock it holds) would answer none of them in that window.
        let duringSpin = answeredDuringSpin.load(ordering: .sequentiallyConsistent)
        #expect(duringSpin >= 3, "\(duringSpin) profile reads were answered while a helper spun on the file")
        let id = try Self.upload(server, account.token)
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(id)/thumbnail?size=128").status == 200)
        // Decoding the spinning file was tried once: recorded, never again.
        #expect(try server.metric("exosphere_thumbnail_helper_deaths_total") == 1)
        #expect((try server.metric("exosphere_thumbnail_jobs_total{outcome=\"made\"}") ?? 0) >= 1)
    }

    @Test func theMoveBetweenStoragesAndTheSweepKnowThumbnails() throws {
        let server = try TestServer("thumbs_move") { $0.images.directory = try makeTemporaryDirectory("exo-thumbs-move") }
        defer { server.shutdown() }
        let account = try server.register()
        let id = try Self.upload(server, account.token)
        let uuid = try #require(UUID(uuidString: id))
        let path = "/users/me/images/\(id)/thumbnail"
        let small = try ImageScenarios.get(server, account.token, path + "?size=128", [("Accept", "image/jpeg")])
        #expect(small.status == 200)
        try waitUntil("the upload's thumbnail") {
            try Self.count(server, "SELECT count(*) FROM image_thumbnails WHERE image_id = \(uuid)") == 2
        }
        let directory = ImageDirectory(root: server.app.configuration.images.directory)
        let specs = [ThumbnailSpec(size: 128, format: .jpeg), ThumbnailSpec(size: 256, format: .webp)]

        #expect(try server.app.images.migrate(to: .filesystem) == 1)
        for spec in specs { #expect(FileManagerLike.exists(directory.thumbnailPath(of: uuid, spec)), "\(spec)") }
        #expect(try Self.count(server, "SELECT count(*) FROM image_thumbnails WHERE bytes IS NULL") == 2)
        #expect(try ImageScenarios.get(server, account.token, path + "?size=128", [("Accept", "image/jpeg")]).body == small.body)

        // An orphan thumbnail file (its row gone) is swept; the others stay.
        let orphan = UUID(uuid: (uuid.uuid.0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15))
        let orphanPath = directory.thumbnailPath(of: orphan, ThumbnailSpec(size: 512, format: .webp))
        try [UInt8]([1, 2, 3]).withUnsafeBytes { try FileSystem.writeNewFile(orphanPath, $0, sync: false) }
        let report = try server.app.images.sweep()
        #expect(report.orphanThumbnails == 1)
        #expect(!FileManagerLike.exists(orphanPath))
        for spec in specs { #expect(FileManagerLike.exists(directory.thumbnailPath(of: uuid, spec)), "\(spec)") }

        #expect(try server.app.images.migrate(to: .database) == 1)
        for spec in specs { #expect(!FileManagerLike.exists(directory.thumbnailPath(of: uuid, spec)), "\(spec)") }
        #expect(try Self.count(server, "SELECT count(*) FROM image_thumbnails WHERE bytes IS NOT NULL") == 2)
        #expect(try ImageScenarios.get(server, account.token, path + "?size=128", [("Accept", "image/jpeg")]).body == small.body)
    }
}

/// `access(2)`, without Foundation's FileManager.
enum FileManagerLike {
    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }
}
