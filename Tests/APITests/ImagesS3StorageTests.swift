import API
import AWSSignature
import Foundation
import Glibc
import Images
import ObjectStorage
import TestSupport
import Testing

/// The s3 storage on a new bucket of the test cluster (TestCeph), under the prefix `exo/`.
enum CephImages {
    static func use(_ configuration: inout Configuration, redirect: Bool = false) throws {
        let ceph = try TestCeph.shared()
        configuration.images.storage = .s3
        configuration.images.s3 = S3Configuration(
            endpoint: ceph.endpoint, bucket: ceph.uniqueBucketName("images"), pathStyle: true,
            credentials: AWSCredentials(accessKeyID: ceph.accessKeyID, secretAccessKey: ceph.secretAccessKey))
        configuration.images.s3Prefix = "exo/"
        configuration.images.s3Redirect = redirect
        configuration.images.maxBytes = ImageScenarios.maxBytes
    }
}

/// The same scenarios as the database and filesystem storages, with images in the test Ceph
/// cluster (TestCeph): the API answers alike whatever the storage.
@Suite(.testThreads, .liveServer("images_s3", { try CephImages.use(&$0) }), .serialized)
struct ImagesS3StorageTests {
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

    var store: S3Client { get throws { try #require(server.app.images.objectStore) } }

    /// The original is the object `exo/<id>` (boto3 reads it byte for byte), its thumbnail
    /// `exo/<id>-256.webp` beside it; deleting the image removes both and leaves nothing queued.
    @Test func objectsBesideEachOtherAndGoneWithTheImage() throws {
        let ceph = try TestCeph.shared()
        let account = try server.register()
        let bytes = ImageScenarios.png(size: 200_000, seed: 3)
        let created = try ImageScenarios.upload(server, account.token, "image/png", RealFiles.png3x2)
        #expect(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)
        let large = try ImageScenarios.upload(server, account.token, "image/png", bytes)
        let largeID = try #require(large.json["id"]?.stringValue)
        let directory = try makeTemporaryDirectory("s3-api")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try ceph.boto3(["get", try store.configuration.bucket, "exo/\(largeID)", directory + "/object"])
        #expect(same(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/object"))), bytes))

        let thumbnail = try ImageScenarios.get(server, account.token, "/users/me/images/\(id)/thumbnail", [("Accept", "image/webp")])
        #expect(thumbnail.status == 200)
        #expect(try store.headObject("exo/\(id)-256.webp").size == thumbnail.body.count)

        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(id)", method: "DELETE").status == 204)
        #expect(try store.listAllObjects(prefix: "exo/\(id)").isEmpty)
        #expect(try server.app.images.pendingObjectDeletions() == 0)
    }

    /// An object no row names (an upload whose row never committed) is removed by the sweep once
    /// it is older than the grace period; the objects of images are kept.
    @Test func theSweepRemovesObjectsWithoutARow() throws {
        let account = try server.register()
        let created = try ImageScenarios.upload(server, account.token, "image/png", RealFiles.png3x2)
        let id = try #require(created.json["id"]?.stringValue)
        let orphan = "exo/\(UUID().uuidString.lowercased())"
        try store.putObject(orphan, [1, 2, 3])
        let images = server.app.images
        #expect(try images.sweepObjects() == 0, "within the grace period")
        let later = Int(Date().timeIntervalSince1970) + images.configuration.orphanObjectGraceSeconds + 60
        #expect(try images.sweepObjects(now: later) >= 1)
        #expect(throws: S3Error.self) { try store.headObject(orphan) }
        #expect(try store.headObject("exo/\(id)").size == RealFiles.png3x2.count)
        // Again an interval after the last sweep, and not before.
        try store.putObject(orphan, [1, 2, 3])
        #expect(try images.sweepObjectsIfDue(now: later + 60) == nil, "an hour after the last sweep at the earliest")
        #expect(try images.sweepObjectsIfDue(now: later + images.configuration.objectSweepIntervalSeconds + 60) == 1)
        #expect(throws: S3Error.self) { try store.headObject(orphan) }
    }

    /// Two instances on one database and one bucket, no shared disk: what one stores, the other serves.
    @Test func aSecondInstanceServesWhatTheFirstStored() throws {
        let images = server.app.configuration.images
        let second = try TestServer("images_s3_second", sharingDatabaseWith: server) { $0.images = images }
        defer { second.shutdown() }
        let account = try server.register()
        let bytes = ImageScenarios.png(size: 150_000, seed: 5)
        let created = try ImageScenarios.upload(server, account.token, "image/png", bytes)
        let id = try #require(created.json["id"]?.stringValue)
        let read = try ImageScenarios.get(second, account.token, "/users/me/images/\(id)")
        #expect(read.status == 200)
        #expect(same(read.body, bytes))
        #expect(try ImageScenarios.get(second, account.token, "/users/me/images/\(id)", method: "DELETE").status == 204)
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(id)").status == 404)
        #expect(try store.listAllObjects(prefix: "exo/\(id)").isEmpty)
    }

    @Test func metricsCountTheStoreRequests() throws {
        let text = try server.send("GET", "/metrics").text
        let requests = text.split(separator: "\n").first { $0.hasPrefix("exosphere_image_store_requests_total ") }
        #expect((requests.flatMap { Int($0.split(separator: " ")[1]) } ?? 0) > 0)
        #expect(text.contains("exosphere_image_store_pending_deletions 0"))
    }

    /// The export's ZIP reads the originals from the store.
    @Test func theExportCarriesTheOriginals() throws {
        let account = try server.register()
        let bytes = ImageScenarios.png(size: 250_000, seed: 4)
        #expect(try ImageScenarios.upload(server, account.token, "image/png", bytes).status == 201)
        let export = try ImageScenarios.get(server, account.token, "/users/me/export")
        #expect(export.status == 200)
        #expect(export.body.count > bytes.count)
        #expect(export.body.firstRange(of: bytes) != nil)
    }
}

/// Downloads larger than a chunk pass through as the store sends them: whole, by range, and a
/// client that leaves half-way costs nothing to the next.
@Suite(.testThreads) struct ImagesS3StreamingTests {
    @Test func largeImagesStreamWholeByRangeAndAfterAClientLeft() throws {
        let server = try TestServer("images_s3_streaming") {
            try CephImages.use(&$0)
            $0.images.maxBytes = 4 << 20
        }
        defer { server.shutdown() }
        let account = try server.register()
        var images: [(id: String, bytes: [UInt8])] = []
        for seed in 0..<2 {
            let bytes = ImageScenarios.png(size: 1_500_000 + seed, seed: UInt8(seed))
            let created = try ImageScenarios.upload(server, account.token, "image/png", bytes)
            try #require(created.status == 201, "\(created.status) \(created.text)")
            images.append((try #require(created.json["id"]?.stringValue), bytes))
        }
        let whole = try ImageScenarios.get(server, account.token, "/users/me/images/\(images[0].id)")
        #expect(whole.status == 200)
        #expect(same(whole.body, images[0].bytes))
        let part = try server.send(
            "GET", "/users/me/images/\(images[0].id)", headers: [("Authorization", "Bearer \(account.token)"), ("Range", "bytes=300000-1100000")])
        #expect(part.status == 206)
        #expect(same(part.body, Array(images[0].bytes[300_000...1_100_000])))
        #expect(part.header("Content-Range") == "bytes 300000-1100000/\(images[0].bytes.count)")

        // A client that reads the head and a little of the body, then goes.
        let socket = try HTTPClient.connect(port: server.port, receiveBuffer: 4096)
        let request = "GET /users/me/images/\(images[0].id) HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(account.token)\r\n\r\n"
        _ = Array(request.utf8).withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        #expect(recv(socket, &buffer, buffer.count, 0) > 0)
        close(socket)
        for image in images {
            let again = try ImageScenarios.get(server, account.token, "/users/me/images/\(image.id)")
            #expect(again.status == 200)
            #expect(same(again.body, image.bytes), "a download after one a client left is whole")
        }
    }
}

/// The store over https (the gateway's TLS endpoint, its certificate verified): uploads, streamed
/// downloads and ranges answer as over http.
@Suite(.testThreads) struct ImagesS3OverHTTPSTests {
    @Test func imagesGoToTheStoreOverHTTPS() throws {
        let ceph = try TestCeph.shared()
        let server = try TestServer("images_s3_https") {
            try CephImages.use(&$0)
            $0.images.s3?.endpoint = ceph.tlsEndpoint
            $0.images.s3?.caFile = ceph.tlsCAFile
            $0.images.maxBytes = 4 << 20
        }
        defer { server.shutdown() }
        let account = try server.register()
        let bytes = ImageScenarios.png(size: 1_200_000, seed: 5)
        let created = try ImageScenarios.upload(server, account.token, "image/png", bytes)
        try #require(created.status == 201, "\(created.status) \(created.text)")
        let id = try #require(created.json["id"]?.stringValue)
        let downloaded = try ImageScenarios.get(server, account.token, "/users/me/images/\(id)")
        #expect(downloaded.status == 200)
        #expect(same(downloaded.body, bytes))
        let part = try server.send(
            "GET", "/users/me/images/\(id)", headers: [("Authorization", "Bearer \(account.token)"), ("Range", "bytes=700000-")])
        #expect(part.status == 206)
        #expect(same(part.body, Array(bytes[700_000...])))
        #expect(try server.send("GET", "/readyz").status == 200)
    }
}

/// The sweeps thread lists the bucket every `objectSweepIntervalSeconds`, not only at start-up.
@Suite(.testThreads) struct ImagesS3PeriodicSweepTests {
    @Test func objectsWithoutARowGoWhileTheServerRuns() throws {
        let server = try TestServer("images_s3_sweeps") {
            try CephImages.use(&$0)
            $0.accounts.housekeepingIntervalSeconds = 0.2
            $0.images.objectSweepIntervalSeconds = 0
            $0.images.orphanObjectGraceSeconds = 0
        }
        defer { server.shutdown() }
        let store = try #require(server.app.images.objectStore)
        let orphan = "exo/\(UUID().uuidString.lowercased())"
        let foreign = "exo/notes.txt"
        try store.putObject(orphan, [1, 2, 3])
        try store.putObject(foreign, [4])
        try waitUntil(timeout: .seconds(60), "the sweeps thread to remove the object without a row") {
            do { _ = try store.headObject(orphan) } catch let error as S3Error where error.code == .notFound { return true }
            return false
        }
        #expect(try store.headObject(foreign).size == 1, "an object not named after an image is not ours to remove")
    }
}

/// The s3 storage when the store is down: the server starts, uploads answer `503` with
/// `Retry-After` within the bound, the rest of the API serves, and `/readyz` says it is not ready.
@Suite(.testThreads) struct ImagesS3StoreDownTests {
    @Test func uploadsWaitForTheStoreAndTheRestServes() throws {
        let closed = try LoopbackSocket()
        defer { closed.close() }
        let server = try TestServer("images_s3_down") {
            $0.images.storage = .s3
            $0.images.s3 = S3Configuration(
                endpoint: "http://127.0.0.1:\(closed.port)", bucket: "images", pathStyle: true,
                credentials: AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"))
        }
        defer { server.shutdown() }
        let account = try server.register()
        let start = ContinuousClock.now
        let refused = try ImageScenarios.upload(server, account.token, "image/png", RealFiles.png3x2)
        #expect(refused.status == 503)
        #expect(refused.header("Retry-After") == "5")
        #expect(refused.json["code"]?.stringValue == "image_store_unavailable")
        #expect(ContinuousClock.now - start < .seconds(5))
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images").status == 200)
        #expect(try ImageScenarios.get(server, account.token, "/users/me").status == 200)
        #expect(try server.send("GET", "/readyz").status == 503)
    }

    /// A whole download asks the store before the row is read (`find(_:userID:openingWhole:)`):
    /// what the row says still decides. An image kept in the database is read from there, whether
    /// the store has a stale object of it, has none, or is down; someone else's image is 404 though
    /// the store has it; an image in the store that is down is 503.
    @Test func theRowDecidesWhatAWholeDownloadServes() throws {
        let server = try TestServer("images_s3_row_decides") {
            try CephImages.use(&$0)
            $0.images.maxBytes = 1 << 20
        }
        defer { server.shutdown() }
        let store = try #require(server.app.images.objectStore)
        let owner = try server.register()
        let stranger = try server.register()
        let bytes = ImageScenarios.png(size: 400_000, seed: 11)
        let id = try #require(try ImageScenarios.upload(server, owner.token, "image/png", bytes).json["id"]?.stringValue)
        let path = "/users/me/images/\(id)"
        #expect(try ImageScenarios.get(server, stranger.token, path).status == 404)

        #expect(try server.app.images.migrate(to: .database) == 1)
        // A stale object under the image's key, as a move that had not removed it yet leaves one.
        try store.putObject("exo/\(id)", Array(bytes.reversed()))
        let fromTheDatabase = try ImageScenarios.get(server, owner.token, path)
        #expect(fromTheDatabase.status == 200 && same(fromTheDatabase.body, bytes))
        try store.deleteObject("exo/\(id)")
        let withoutAnObject = try ImageScenarios.get(server, owner.token, path)
        #expect(withoutAnObject.status == 200 && same(withoutAnObject.body, bytes))
        let inTheStore = ImageScenarios.png(size: 300_000, seed: 12)
        let storedID = try #require(try ImageScenarios.upload(server, owner.token, "image/png", inTheStore).json["id"]?.stringValue)

        let closed = try LoopbackSocket()
        defer { closed.close() }
        var images = server.app.configuration.images
        images.s3?.endpoint = "http://127.0.0.1:\(closed.port)"
        let storeDown = try TestServer("images_s3_row_decides_down", sharingDatabaseWith: server) { $0.images = images }
        defer { storeDown.shutdown() }
        let served = try ImageScenarios.get(storeDown, owner.token, path)
        #expect(served.status == 200 && same(served.body, bytes))
        // Once a request to the store failed, downloads no longer ask it first.
        let downStore = try #require(storeDown.app.images.objectStore)
        let asked = downStore.statistics.requests
        #expect(downStore.statistics.lastFailed)
        #expect(try ImageScenarios.get(storeDown, owner.token, path).status == 200)
        #expect(downStore.statistics.requests == asked)
        #expect(try ImageScenarios.get(storeDown, stranger.token, path).status == 404)
        let unavailable = try ImageScenarios.get(storeDown, owner.token, "/users/me/images/\(storedID)")
        #expect(unavailable.status == 503)
        #expect(unavailable.json["code"]?.stringValue == "image_store_unavailable")
    }

    /// `--s3-redirect`: a signed URL of an original answers 302 to a presigned GET on the store,
    /// which serves the bytes.
    @Test func signedURLsRedirectToThePresignedObject() throws {
        let ceph = try TestCeph.shared()
        let server = try TestServer("images_s3_redirect") { try CephImages.use(&$0, redirect: true) }
        defer { server.shutdown() }
        let account = try server.register()
        let created = try ImageScenarios.upload(server, account.token, "image/png", RealFiles.png3x2)
        let url = try #require(created.json["signedUrl"]?.stringValue)
        let reply = try server.send("GET", url)
        #expect(reply.status == 302)
        let location = try #require(reply.header("Location"))
        #expect(location.hasPrefix(ceph.endpoint + "/"))
        let directory = try makeTemporaryDirectory("s3-redirect")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try ceph.boto3(["fetch", location, directory + "/fetched"]) == "200\n")
        #expect(same(Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/fetched"))), RealFiles.png3x2))
        #expect(try server.send("GET", "/readyz").status == 200)
    }
}

/// `exosphere images migrate --to s3` and back, on a live deployment: every image and its
/// thumbnail move with their bytes checked, downloads answer the same before and after, and the
/// objects left behind are removed.
@Suite(.testThreads) struct ImagesS3MigrationTests {
    @Test func fromTheDatabaseToObjectsToFilesAndBack() throws {
        let server = try TestServer("images_s3_migrate") {
            try CephImages.use(&$0)
            $0.images.storage = .database
            $0.images.directory = try makeTemporaryDirectory("exo-images-s3-migrate")
        }
        defer { server.shutdown() }
        let images = server.app.images
        let store = try #require(images.objectStore)
        let account = try server.register()
        var uploaded: [(id: String, bytes: [UInt8])] = []
        for seed in 0..<3 {
            let bytes = ImageScenarios.png(size: 40_000 + seed, seed: UInt8(seed))
            let created = try ImageScenarios.upload(server, account.token, "image/png", bytes)
            uploaded.append((try #require(created.json["id"]?.stringValue), bytes))
        }
        let real = try ImageScenarios.upload(server, account.token, "image/png", RealFiles.png3x2)
        let realID = try #require(real.json["id"]?.stringValue)
        uploaded.append((realID, RealFiles.png3x2))
        let thumbnail = try ImageScenarios.get(server, account.token, "/users/me/images/\(realID)/thumbnail", [("Accept", "image/webp")])
        #expect(thumbnail.status == 200)
        func everyImageReadsTheSame(_ storage: String) throws {
            for (id, bytes) in uploaded {
                let reply = try ImageScenarios.get(server, account.token, "/users/me/images/\(id)")
                #expect(reply.status == 200 && same(reply.body, bytes), "\(storage) \(id)")
            }
            let again = try ImageScenarios.get(server, account.token, "/users/me/images/\(realID)/thumbnail?size=256", [("Accept", "image/webp")])
            #expect(again.status == 200 && same(again.body, thumbnail.body), "\(storage) thumbnail")
            let stored = try server.withDatabase { try $0.query("SELECT DISTINCT storage FROM images")[0].decode(String.self, at: 0) }
            #expect(stored == storage)
        }

        #expect(try images.migrate(to: .s3) == uploaded.count)
        try everyImageReadsTheSame("s3")
        #expect(try store.headObject("exo/\(realID)-256.webp").size == thumbnail.body.count)
        #expect(try server.withDatabase { try $0.query("SELECT count(*) FROM image_data")[0].decode(Int.self, at: 0) } == 0)

        #expect(try images.migrate(to: .filesystem) == uploaded.count)
        try everyImageReadsTheSame("filesystem")
        #expect(try store.listAllObjects(prefix: "exo/").isEmpty)
        #expect(try images.pendingObjectDeletions() == 0)

        #expect(try images.migrate(to: .s3) == uploaded.count)
        #expect(try images.migrate(to: .database) == uploaded.count)
        try everyImageReadsTheSame("database")
        #expect(try store.listAllObjects(prefix: "exo/").isEmpty)
        #expect(try images.migrate(to: .database) == 0)
    }
}
