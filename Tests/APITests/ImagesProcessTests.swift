@testable import API
import Files
import Foundation
import Glibc
import TestSupport
import JSON
import Postgres
import Cryptography
import Synchronization
import ObjectStorage
import AWSSignature
import Testing

/// The image storages across process lifetimes: the built binary killed with SIGKILL in the middle
/// of uploads, and `exosphere images migrate` in both directions, interrupted and resumed.
@Suite(.testThreads, .drill, .serialized) struct ImagesProcessTests {
    typealias Child = ExosphereProcessTests.Child

    /// A database of the test cluster and an image directory of one test.
    struct Deployment {
        let databaseURL: String
        let imageDirectory: String

        static func make(_ name: String) throws -> Deployment {
            let url = try TestCluster.cluster().createDatabase("images_\(name)_\(getpid())")
            return Deployment(databaseURL: url, imageDirectory: try makeTemporaryDirectory("exo-images-\(name)"))
        }

        var options: [String] {
            ["--database-url", databaseURL, "--image-dir", imageDirectory, "--image-max-bytes", String(1 << 20)]
        }

        func serve(_ storage: String) throws -> Child {
            try ExosphereProcessTests.serve(options + ["--image-storage", storage])
        }

        /// Runs `exosphere images migrate` to the end (or to its limit) and returns its output.
        func migrate(to storage: String, extra: [String] = []) throws -> String {
            let child = try migration(to: storage, extra: extra)
            #expect(child.waitForExit(timeout: 120), "images migrate did not finish: \(child.stderr)")
            #expect(child.exitCode == 0, "images migrate failed: \(child.stderr)")
            return child.stderr
        }

        func migration(to storage: String, extra: [String] = []) throws -> Child {
            let binary = try #require(ExosphereProcessTests.executable())
            return try Child(
                executable: binary.path,
                arguments: ["images", "migrate", "--to", storage] + options + extra + ["--log-level", "warning"],
                environment: [:], port: 0)
        }

        func withDatabase<R>(_ body: (PostgresConnection) throws -> R) throws -> R {
            let connection = try PostgresConnection(connectionString: databaseURL)
            defer { connection.close() }
            return try body(connection)
        }

        /// (id, storage, sha256) of every image row.
        func rows() throws -> [(id: String, storage: String, sha256: [UInt8])] {
            try withDatabase { connection in
                try connection.query("SELECT id::text, storage, sha256 FROM images ORDER BY created_at, id").map {
                    (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1), try $0.decode([UInt8].self, at: 2))
                }
            }
        }

        /// The image files on disk, by id.
        /// The originals' files (thumbnails, `<id>-<size>.<ext>`, are not counted).
        func files() throws -> Set<String> {
            var ids: Set<String> = []
            for prefix in try FileSystem.entries(of: imageDirectory) where prefix.count == 2 {
                for name in try FileSystem.entries(of: imageDirectory + "/" + prefix) where name.count == 36 { ids.insert(name) }
            }
            return ids
        }

        func remove() { _ = try? FileManager.default.removeItem(atPath: imageDirectory) }

        /// How many images have their upload's thumbnail and placeholders, or are known undecodable.
        func thumbnailsPrepared() throws -> Int {
            try withDatabase {
                try $0.query(
                    """
                    SELECT count(*)::int8 FROM images i WHERE i.thumbnail_error IS NOT NULL
                        OR (i.blurhash IS NOT NULL AND EXISTS (SELECT 1 FROM image_thumbnails t WHERE t.image_id = i.id))
                    """)[0].decode(Int.self, at: 0)
            }
        }

        /// How many image rows say `storage`.
        func count(in storage: String) throws -> Int {
            try withDatabase { try $0.query("SELECT count(*)::int8 FROM images WHERE storage = \(storage)")[0].decode(Int.self, at: 0) }
        }

        /// The ids of the images whose bytes are in `image_data`.
        func dataRows() throws -> Set<String> {
            Set(try withDatabase { try $0.query("SELECT image_id::text FROM image_data").map { try $0.decode(String.self, at: 0) } })
        }

        /// Backends of the database waiting for a lock.
        func lockWaiters() throws -> Int {
            try withDatabase {
                try $0.query(
                    """
                    SELECT count(*)::int8 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                    """)[0].decode(Int.self, at: 0)
            }
        }

        /// Temporary files left in the image directory's `tmp`.
        func temporaryFiles() throws -> [String] {
            let path = imageDirectory + "/tmp"
            guard access(path, F_OK) == 0 else { return [] }
            return try FileSystem.entries(of: path)
        }
    }

    static func register(_ port: Int) throws -> String {
        let email = "images-\(UInt32.random(in: 0...UInt32.max))@example.com"
        let body = Array(#"{"email": "\#(email)", "password": "correct horse battery staple"}"#.utf8)
        let reply = try HTTPClient.send(
            port: port, method: "POST", target: "/users",
            headers: [("Content-Type", "application/json")], body: body)
        try #require(reply.status == 201, "register: \(reply.status) \(reply.text)")
        return try #require(reply.json["accessToken"]?.stringValue)
    }

    static func upload(_ port: Int, _ token: String, _ bytes: [UInt8]) throws -> Reply {
        try HTTPClient.send(
            port: port, method: "POST", target: "/users/me/images",
            headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "image/png")], body: bytes)
    }

    static func download(_ port: Int, _ token: String, _ id: String) throws -> Reply {
        try HTTPClient.send(
            port: port, method: "GET", target: "/users/me/images/\(id)",
            headers: [("Authorization", "Bearer \(token)")], body: nil)
    }

    // MARK: - SIGKILL

    @Test func filesystemStorageSurvivesSIGKILLDuringUploads() throws {
        let deployment = try Deployment.make("kill")
        defer { deployment.remove() }
        var child = try deployment.serve("filesystem")
        let token = try Self.register(child.port)

        let log = Self.uploadUntilSIGKILL(child, token)
        #expect(child.waitForExit(timeout: 10))
        #expect(child.killedBy == SIGKILL)
        let saved = log.acknowledged.withLock { $0 }
        #expect(saved.count > 0, "some uploads were acknowledged before the kill")

        // Debris of a crash that the sweep must clear: a file whose row never committed, a
        // temporary file from an hour ago. Neither may ever be served.
        let orphan = UUID().uuidString.lowercased()
        try FileSystem.writeNewFile("\(deployment.imageDirectory)/\(orphan.prefix(2))/\(orphan)", [1, 2, 3].withUnsafeBytes { $0 }, sync: false)
        let stale = "\(deployment.imageDirectory)/tmp/\(orphan).1.part"
        try FileSystem.writeNewFile(stale, [4, 5, 6].withUnsafeBytes { $0 }, sync: false)
        var old = [timeval(tv_sec: time(nil) - 7200, tv_usec: 0), timeval(tv_sec: time(nil) - 7200, tv_usec: 0)]
        utimes(stale, &old)

        child = try deployment.serve("filesystem")
        defer { child.signal(SIGTERM); _ = child.waitForExit(timeout: 10) }

        let rows = try deployment.rows()
        let files = try deployment.files()
        // No row without its file, no file without its row, no temporary file left.
        #expect(Set(rows.map(\.id)) == files, "rows and files agree after the restart's sweep")
        #expect(!files.contains(orphan))
        #expect(access(stale, F_OK) != 0)
        try Self.expectEveryImageServed(child.port, token, saved, rows)
    }

    /// Every acknowledged upload is there, whole; every row (acknowledged or committed just before
    /// a kill) serves bytes matching its hash.
    static func expectEveryImageServed(
        _ port: Int, _ token: String, _ acknowledged: [String: [UInt8]], _ rows: [(id: String, storage: String, sha256: [UInt8])]
    ) throws {
        for (id, bytes) in acknowledged {
            let reply = try download(port, token, id)
            #expect(reply.status == 200)
            #expect(same(reply.body, bytes), "image \(id) is whole after the kill")
        }
        for row in rows {
            let reply = try download(port, token, row.id)
            #expect(reply.status == 200)
            #expect(SHA256.hash(reply.body) == row.sha256, "image \(row.id) serves what its row says")
        }
    }

    // MARK: - The object store: SIGKILL of the server, and of the store

    /// The s3 storage on a bucket of its own of the test Ceph, under `exo/`.
    struct ObjectStore {
        let ceph: TestCeph
        let bucket: String
        let client: S3Client

        init() throws {
            ceph = try TestCeph.shared()
            bucket = ceph.uniqueBucketName("kill")
            client = try S3Client(
                S3Configuration(
                    endpoint: ceph.endpoint, bucket: bucket, pathStyle: true,
                    credentials: AWSCredentials(accessKeyID: ceph.accessKeyID, secretAccessKey: ceph.secretAccessKey)))
        }

        var options: [String] {
            [
                "--image-storage", "s3", "--s3-endpoint", ceph.endpoint, "--s3-bucket", bucket, "--s3-path-style", "on", "--s3-prefix", "exo/",
                "--upload-rate", "0",
            ]
        }
        var environment: [String: String] { ["AWS_ACCESS_KEY_ID": ceph.accessKeyID, "AWS_SECRET_ACCESS_KEY": ceph.secretAccessKey] }

        func serve(_ deployment: Deployment, _ extra: [String] = []) throws -> Child {
            try ExosphereProcessTests.serve(deployment.options + options + extra, environment: environment)
        }

        /// The ids of the originals in the bucket (`exo/<id>`, not the thumbnails beside them).
        func originals() throws -> Set<String> {
            Set(try client.listAllObjects(prefix: "exo/").map { String($0.key.dropFirst(4)) }.filter { $0.count == 36 })
        }

        /// The ids every object is named after, thumbnails included.
        func namedIDs() throws -> Set<String> {
            Set(try client.listAllObjects(prefix: "exo/").map { String($0.key.dropFirst(4).prefix(36)) })
        }
    }

    /// Uploads on 6 threads until `stop`; every answer's status, and the acknowledged images.
    final class UploadLog: Sendable {
        let acknowledged = Mutex<[String: [UInt8]]>([:])
        let statuses = Mutex<[Int: Int]>([:])
        let stop = Atomic<Bool>(false)

        func run(_ port: Int, _ token: String, _ index: Int) {
            var round = 0
            while !stop.load(ordering: .sequentiallyConsistent) {
                let bytes = ImageScenarios.png(size: 200_000 + index * 1000 + round, seed: UInt8(truncatingIfNeeded: index * 31 + round))
                round += 1
                // No answer at all: the connection died with the process.
                guard let reply = try? ImagesProcessTests.upload(port, token, bytes) else { continue }
                statuses.withLock { $0[reply.status, default: 0] += 1 }
                if reply.status == 201, let id = reply.json["id"]?.stringValue { acknowledged.withLock { $0[id] = bytes } }
            }
        }

        var count: Int { acknowledged.withLock { $0.count } }
    }

    /// Uploads on 6 threads until the process dies under them (SIGKILL, once 6 uploads were
    /// acknowledged; if none ever is, killed anyway, and the checks of them fail).
    static func uploadUntilSIGKILL(_ child: Child, _ token: String) -> UploadLog {
        let log = UploadLog()
        let (port, pid) = (child.port, child.pid)
        onThreads(7) { index in
            guard index == 6 else { return log.run(port, token, index) }
            _ = try? waitUntil(timeout: .seconds(60), "6 acknowledged uploads") { log.count >= 6 }
            kill(pid, SIGKILL)
            log.stop.store(true, ordering: .sequentiallyConsistent)
        }
        return log
    }

    /// What must hold once the server restarted with a sweep that spares nothing young: every
    /// acknowledged image is whole, every row has its object and serves what its hash says, and no
    /// object is left without a row.
    static func expectNothingLostNothingOrphaned(
        _ deployment: Deployment, _ store: ObjectStore, _ child: Child, _ token: String, _ acknowledged: [String: [UInt8]]
    ) throws {
        let rows = try deployment.rows()
        #expect(rows.allSatisfy { $0.storage == "s3" })
        let originals = try store.originals()
        #expect(
            Set(rows.map(\.id)) == originals,
            "rows and objects agree after the restart's sweep: rows without an object \(Set(rows.map(\.id)).subtracting(originals)), objects without a row \(originals.subtracting(rows.map(\.id)))"
        )
        #expect((try store.namedIDs()).isSubset(of: Set(rows.map(\.id))), "no thumbnail object outlives its image")
        #expect(Set(acknowledged.keys).isSubset(of: Set(rows.map(\.id))), "every acknowledged upload has its row")
        try expectEveryImageServed(child.port, token, acknowledged, rows)
    }

    /// The server killed (SIGKILL) in the middle of uploads to the object store: objects put whose
    /// rows never committed are the debris, and the restarted server's sweep clears them.
    @Test func objectStorageSurvivesSIGKILLOfTheServerDuringUploads() throws {
        let deployment = try Deployment.make("s3kill")
        defer { deployment.remove() }
        let store = try ObjectStore()
        var child = try store.serve(deployment)
        let token = try Self.register(child.port)
        let log = Self.uploadUntilSIGKILL(child, token)
        #expect(child.waitForExit(timeout: 10))
        #expect(child.killedBy == SIGKILL)
        let acknowledged = log.acknowledged.withLock { $0 }
        #expect(acknowledged.count >= 6, "uploads were acknowledged before the kill")
        // An object whose row never committed, whatever the kill left: the sweep must remove it.
        let orphan = UUID().uuidString.lowercased()
        try store.client.putObject("exo/" + orphan, [1, 2, 3])

        child = try store.serve(deployment, ["--s3-orphan-grace", "0"])
        defer { child.signal(SIGTERM); _ = child.waitForExit(timeout: 10) }
        #expect(!(try store.originals()).contains(orphan))
        try Self.expectNothingLostNothingOrphaned(deployment, store, child, token, acknowledged)
    }

    /// The object store killed (SIGKILL of the RADOS Gateway) in the middle of uploads: uploads
    /// answer `503` while it is down and the rest of the API serves; once it is back, uploads land
    /// again, and nothing acknowledged is lost or left without its object.
    @Test func objectStorageSurvivesSIGKILLOfTheStoreDuringUploads() throws {
        let deployment = try Deployment.make("s3storekill")
        defer { deployment.remove() }
        let store = try ObjectStore()
        var child = try store.serve(deployment)
        let token = try Self.register(child.port)
        let log = UploadLog()
        let port = child.port
        let ceph = store.ceph
        struct Outage: Sendable {
            var refusedWhileDown = false
            var profileWhileDown = 0
            var readyWhileDown = 0
        }
        let outage = Mutex(Outage())
        try onThreads(7) { index in
            guard index == 6 else { return log.run(port, token, index) }
            defer { log.stop.store(true, ordering: .sequentiallyConsistent) }
            try waitUntil(timeout: .seconds(60), "6 acknowledged uploads") { log.count >= 6 }
            try ceph.killGateway()
            let refusedBefore = log.statuses.withLock { $0[503, default: 0] }
            let refused =
                (try? waitUntil(timeout: .seconds(60), "uploads refused with 503 while the store is down") {
                    log.statuses.withLock { $0[503, default: 0] } >= refusedBefore + 6
                }) != nil
            let profile = try HTTPClient.send(
                port: port, method: "GET", target: "/users/me", headers: [("Authorization", "Bearer \(token)")], body: nil)
            let ready = try HTTPClient.send(port: port, method: "GET", target: "/readyz", headers: [], body: nil)
            outage.withLock { $0 = Outage(refusedWhileDown: refused, profileWhileDown: profile.status, readyWhileDown: ready.status) }
            try ceph.startGateway()
            let acknowledgedBefore = log.count
            try waitUntil(timeout: .seconds(60), "uploads to land again once the store is back") { log.count >= acknowledgedBefore + 3 }
        }
        let seen = outage.withLock { $0 }
        #expect(seen.refusedWhileDown, "uploads answered 503 while the store was down")
        #expect(seen.profileWhileDown == 200, "the rest of the API served while the store was down")
        #expect(seen.readyWhileDown == 503, "/readyz said the store was missing")
        let statuses = log.statuses.withLock { $0 }
        #expect(
            Set(statuses.keys).isSubset(of: [201, 503]),
            "every upload answered 201 or 503: \(statuses); \(child.stderr.split(separator: "\n").filter { $0.contains("failed") }.prefix(5))")
        #expect(try HTTPClient.send(port: port, method: "GET", target: "/readyz", headers: [], body: nil).status == 200)

        // A PUT the gateway took as it died may have left an object whose upload answered 503:
        // the sweep of a restart that spares nothing young removes it.
        child.signal(SIGTERM)
        #expect(child.waitForExit(timeout: 20))
        child = try store.serve(deployment, ["--s3-orphan-grace", "0"])
        defer { child.signal(SIGTERM); _ = child.waitForExit(timeout: 10) }
        try Self.expectNothingLostNothingOrphaned(deployment, store, child, token, log.acknowledged.withLock { $0 })
    }

    // MARK: - Migration

    @Test func migrationMovesEveryImageBothWaysAndResumes() throws {
        let deployment = try Deployment.make("migrate")
        defer { deployment.remove() }
        var uploaded: [(id: String, bytes: [UInt8])] = []
        let token: String
        do {
            let child = try deployment.serve("database")
            defer { child.signal(SIGTERM); _ = child.waitForExit(timeout: 10) }
            token = try Self.register(child.port)
            for index in 0..<40 {
                let bytes = ImageScenarios.png(size: 20_000 + index, seed: UInt8(index))
                let reply = try Self.upload(child.port, token, bytes)
                try #require(reply.status == 201)
                uploaded.append((try #require(reply.json["id"]?.stringValue), bytes))
            }
        }
        #expect(try deployment.rows().allSatisfy { $0.storage == "database" })

        // Part of the way: 15 images move, the rest stay, and both kinds are served.
        let partial = try deployment.migrate(to: "filesystem", extra: ["--limit", "15"])
        #expect(partial.contains("15/15 moved to filesystem"), "\(partial)")
        var rows = try deployment.rows()
        #expect(rows.filter { $0.storage == "filesystem" }.count == 15)
        #expect(rows.prefix(15).allSatisfy { $0.storage == "filesystem" }, "oldest first")
        #expect(try deployment.files() == Set(rows.filter { $0.storage == "filesystem" }.map(\.id)))
        do {
            let child = try deployment.serve("filesystem")
            defer { child.signal(SIGTERM); _ = child.waitForExit(timeout: 10) }
            for image in uploaded {
                #expect(same(try Self.download(child.port, token, image.id).body, image.bytes), "mixed storages serve every image")
            }
        }

        // Killed midway through the rest: every image is still whole in exactly one storage. The
        // test holds row 20 (oldest first, as the migration goes), so the migration stops there
        // with 20 moved, waiting for the lock, and is killed in that state, never after a delay.
        let held = 20
        let holder = try PostgresConnection(connectionString: deployment.databaseURL)
        defer { holder.close() }
        _ = try holder.execute("BEGIN")
        _ = try holder.query("SELECT 1 FROM images WHERE id = \(rows[held].id)::uuid FOR KEY SHARE")
        let interrupted = try deployment.migration(to: "filesystem")
        defer { if interrupted.isRunning { interrupted.signal(SIGKILL); _ = interrupted.waitForExit(timeout: 10) } }
        try waitUntil(timeout: .seconds(60), "the migration to move \(held) images and wait for the row the test holds") {
            guard interrupted.isRunning else { throw TestFailure("images migrate ended early: \(interrupted.stderr)") }
            return try deployment.count(in: "filesystem") == held && deployment.lockWaiters() >= 1
        }
        let backend = try deployment.withDatabase {
            try $0.query("SELECT pid::int8 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")[0]
                .decode(Int.self, at: 0)
        }
        interrupted.signal(SIGKILL)
        #expect(interrupted.waitForExit(timeout: 10), "images migrate did not die of SIGKILL")
        #expect(interrupted.killedBy == SIGKILL)
        // Let its backend go on: it finds its client gone, and the move of the held row is rolled back.
        _ = try holder.execute("ROLLBACK")
        try waitUntil(timeout: .seconds(30), "the killed migration's backend to end") {
            try deployment.withDatabase {
                try $0.query("SELECT count(*)::int8 FROM pg_stat_activity WHERE pid = \(backend)")[0].decode(Int.self, at: 0)
            } == 0
        }
        rows = try deployment.rows()
        #expect(rows.filter { $0.storage == "filesystem" }.count == held, "killed midway: \(held) of 40 moved")
        let dataRows = try deployment.withDatabase { try $0.query("SELECT image_id::text FROM image_data").map { try $0.decode(String.self, at: 0) } }
        #expect(Set(dataRows) == Set(rows.filter { $0.storage == "database" }.map(\.id)))
        #expect(Set(rows.filter { $0.storage == "filesystem" }.map(\.id)).isSubset(of: try deployment.files()))

        // Resumed: the rest moves; the database keeps no bytes.
        let resumed = try deployment.migrate(to: "filesystem")
        #expect(resumed.contains("done"), "\(resumed)")
        rows = try deployment.rows()
        #expect(rows.allSatisfy { $0.storage == "filesystem" })
        #expect(try deployment.withDatabase { try $0.query("SELECT count(*) FROM image_data")[0].decode(Int.self, at: 0) } == 0)
        #expect(try deployment.files() == Set(uploaded.map(\.id)))

        // And back: the files go, the bytes return to the database.
        let back = try deployment.migrate(to: "database")
        #expect(back.contains("40/40 moved to database"), "\(back)")
        #expect(try deployment.rows().allSatisfy { $0.storage == "database" })
        #expect(try deployment.files().isEmpty)
        let child = try deployment.serve("database")
        defer { child.signal(SIGTERM); _ = child.waitForExit(timeout: 10) }
        for image in uploaded {
            let reply = try Self.download(child.port, token, image.id)
            #expect(same(reply.body, image.bytes))
            #expect(reply.header("ETag") == "\"\(SHA256.hexDigest(image.bytes))\"")
        }
        // Nothing left to do: a second run moves nothing.
        #expect(try deployment.migrate(to: "database").contains("done, 0 moved"))
    }

    // MARK: - Migration interrupted, with downloads running

    /// The images of the interrupted migrations: mostly small, and three larger than the 256 KiB
    /// chunks in which the database storage streams a download (`ImageService.chunkSize`).
    static let interruptedImages: [[UInt8]] = (0..<40).map { index in
        let size = [5: 300_000, 17: 700_000, 29: 1_000_000][index] ?? 20_000 + 137 * index
        return ImageScenarios.png(size: size, seed: UInt8(index))
    }

    /// What the download threads saw.
    final class DownloadLog: Sendable {
        let completed = Atomic<Int>(0)
        let stop = Atomic<Bool>(false)
        /// Answers that were not the image, whole, with its ETag.
        let problems = Mutex<[String]>([])
        /// Bodies of a large database-stored image cut short: a stream whose next chunk was read
        /// after the image had moved to the filesystem (see `aChunkedDownloadSurvivesItsImageMovingToTheFilesystem`).
        let cutShort = Mutex<[String]>([])
    }

    /// Downloads every image, in a shuffled order, again and again until `log.stop`, checking each
    /// answer against the image's bytes and the ETag it had before the migration.
    static func downloadRepeatedly(
        port: Int, token: String, images: [(id: String, bytes: [UInt8], etag: String)],
        seed: UInt64, log: DownloadLog
    ) {
        var random = SplitMix64(seed: seed)
        while !log.stop.load(ordering: .sequentiallyConsistent) {
            for image in images.shuffled(using: &random) {
                if log.stop.load(ordering: .sequentiallyConsistent) { return }
                guard let reply = try? download(port, token, image.id) else {
                    log.problems.withLock { $0.append("\(image.id): no answer") }
                    continue
                }
                if reply.status == 200, reply.body.count < image.bytes.count, image.bytes.count > 256 * 1024,
                    same(reply.body, Array(image.bytes.prefix(reply.body.count)))
                {
                    log.cutShort.withLock { $0.append("\(image.id): \(reply.body.count) of \(image.bytes.count) bytes") }
                } else if reply.status != 200 || !same(reply.body, image.bytes) || reply.header("ETag") != image.etag {
                    log.problems.withLock {
                        $0.append(
                            "\(image.id): \(reply.status), \(reply.body.count) of \(image.bytes.count) bytes, ETag \(reply.header("ETag") ?? "none")")
                    }
                }
                log.completed.add(1, ordering: .relaxed)
            }
        }
    }

    /// `exosphere images migrate` stopped by a signal after some images have moved, in each
    /// direction, with a server serving downloads of every image the whole time; then run again to
    /// the end. The migration is held at an image by a row lock of the test's, so that the
    /// interruption comes after a known number of images have moved and before the last one
    /// (the test holds a second row near the end), read from the database, never after a delay.
    /// Every answer of the downloads is the whole image with its original ETag; after the second
    /// run every image is in the target storage and nothing is left in the old one.
    @Test(arguments: [("filesystem", SIGKILL), ("database", SIGINT)] as [(String, Int32)])
    func anInterruptedMigrationWithDownloadsRunningResumesToTheEnd(_ target: String, _ signal: Int32) throws {
        let source = target == "filesystem" ? "database" : "filesystem"
        let deployment = try Deployment.make("interrupt_\(target)")
        defer { deployment.remove() }
        let server = try deployment.serve(source)
        defer { server.signal(SIGTERM); _ = server.waitForExit(timeout: 10) }
        let token = try Self.register(server.port)
        var uploaded: [(id: String, bytes: [UInt8], etag: String)] = []
        for bytes in Self.interruptedImages {
            let reply = try Self.upload(server.port, token, bytes)
            try #require(reply.status == 201, "upload: \(reply.status) \(reply.text)")
            let id = try #require(reply.json["id"]?.stringValue)
            let downloaded = try Self.download(server.port, token, id)
            let whole = downloaded.status == 200 && same(downloaded.body, bytes)
            try #require(whole, "the first download of image \(id): \(downloaded.status), \(downloaded.body.count) bytes")
            uploaded.append((id, bytes, try #require(downloaded.header("ETag"))))
        }
        let images = uploaded
        let rows = try deployment.rows()
        try #require(rows.count == images.count && rows.allSatisfy { $0.storage == source })
        // `serve` makes each upload's first thumbnail in the background (slowly, under a loaded
        // machine). Once they are all made, the migrations are the only writers of `tmp`, and a
        // thumbnail that `serve` is publishing cannot be taken for a file a migration left.
        try waitUntil(timeout: .seconds(120), "serve to make the first thumbnail of each upload") {
            try deployment.thumbnailsPrepared() == images.count
        }
        // The migration goes oldest first, as `rows` lists them: it stops at row 12 until the test
        // lets it go, and at row 34 again.
        let (first, second) = (12, 34)
        let firstHeld = rows[first].id
        let secondHeld = rows[second].id

        let log = DownloadLog()
        let port = server.port
        struct Observed: Sendable {
            var movedWhenHeld = 0
            var downloadsWhileHeld = 0
            var movedAtInterruption = 0
            var interruptedBy: Int32?
            var interruptedStatus: Int32?
            var storages: [String: Int] = [:]
            var dataRowsMatch = false
            var filesystemRowsHaveFiles = false
            var resumedExit: Int32?
            var resumedOutput = ""
        }
        let observed = Mutex(Observed())
        try onThreads(4) { index in
            guard index == 0 else {
                Self.downloadRepeatedly(port: port, token: token, images: images, seed: UInt64(index), log: log)
                return
            }
            defer { log.stop.store(true, ordering: .sequentiallyConsistent) }
            let holders = try [firstHeld, secondHeld].map { id in
                let connection = try PostgresConnection(connectionString: deployment.databaseURL)
                _ = try connection.execute("BEGIN")
                _ = try connection.query("SELECT 1 FROM images WHERE id = \(id)::uuid FOR KEY SHARE")
                return connection
            }
            defer { holders.forEach { $0.close() } }

            let migration = try deployment.migration(to: target)
            defer { if migration.isRunning { migration.signal(SIGKILL); _ = migration.waitForExit(timeout: 10) } }
            try waitUntil(timeout: .seconds(60), "the migration to move \(first) images and wait for the row the test holds") {
                guard migration.isRunning else { throw TestFailure("images migrate ended early: \(migration.stderr)") }
                return try deployment.count(in: target) == first && deployment.lockWaiters() >= 1
            }
            let moved = try deployment.count(in: target)
            // The migration's backend: gone once the interrupted run is over.
            let backend = try deployment.withDatabase {
                try $0.query("SELECT pid::int8 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'")[0]
                    .decode(Int.self, at: 0)
            }
            // Downloads of every image go on while the migration is midway.
            let downloadsAtHold = log.completed.load(ordering: .relaxed)
            try waitUntil(timeout: .seconds(120), "each image downloaded again while the migration is held") {
                log.completed.load(ordering: .relaxed) >= downloadsAtHold + images.count
            }
            observed.withLock {
                $0.movedWhenHeld = moved
                $0.downloadsWhileHeld = log.completed.load(ordering: .relaxed) - downloadsAtHold
            }

            // Let it go on, and stop it once it has moved a few more (at the latest it waits at the
            // second held row): somewhere in the middle of its work.
            _ = try holders[0].execute("COMMIT")
            try waitUntil(timeout: .seconds(60), "the migration to move 3 more images") {
                try deployment.count(in: target) >= first + 3
            }
            migration.signal(signal)
            let ended = migration.waitForExit(timeout: 30)
            _ = try holders[1].execute("COMMIT")
            try waitUntil(timeout: .seconds(30), "the interrupted migration's backend to end") {
                try deployment.withDatabase {
                    try $0.query("SELECT count(*)::int8 FROM pg_stat_activity WHERE pid = \(backend)")[0].decode(Int.self, at: 0)
                } == 0
            }
            let movedAtInterruption = try deployment.count(in: target)
            // Every image whole in exactly one storage, as the committed rows say.
            let after = try deployment.rows()
            let databaseRows = Set(after.filter { $0.storage == "database" }.map(\.id))
            let filesystemRows = Set(after.filter { $0.storage == "filesystem" }.map(\.id))
            let dataRows = try deployment.dataRows()
            let files = try deployment.files()
            observed.withLock {
                $0.interruptedBy = ended ? migration.killedBy : nil
                $0.interruptedStatus = ended ? migration.exitCode : nil
                $0.movedAtInterruption = movedAtInterruption
                $0.storages = Dictionary(after.map { ($0.storage, 1) }, uniquingKeysWith: +)
                $0.dataRowsMatch = dataRows == databaseRows
                $0.filesystemRowsHaveFiles = filesystemRows.isSubset(of: files)
            }

            // Run again, to the end, with the downloads still going.
            let resumed = try deployment.migration(to: target)
            let finished = resumed.waitForExit(timeout: 120)
            observed.withLock {
                $0.resumedExit = finished ? resumed.exitCode : nil
                $0.resumedOutput = resumed.stderr
            }
        }

        let seen = observed.withLock { $0 }
        #expect(seen.movedWhenHeld == first, "held at row \(first): \(seen.movedWhenHeld) moved")
        #expect(seen.downloadsWhileHeld >= images.count)
        let ending = "signal \(seen.interruptedBy.map { "\($0)" } ?? "none"), exit status \(seen.interruptedStatus.map { "\($0)" } ?? "none")"
        #expect(seen.interruptedBy == signal, "images migrate was to be ended by signal \(signal): \(ending)")
        #expect(
            seen.movedAtInterruption >= first + 3 && seen.movedAtInterruption < second + 1 && seen.movedAtInterruption < images.count,
            "interrupted midway: \(seen.movedAtInterruption) of \(images.count) moved")
        #expect(seen.storages.values.reduce(0, +) == images.count, "\(seen.storages)")
        #expect(seen.dataRowsMatch, "after the interruption: image_data holds exactly the database images")
        #expect(seen.filesystemRowsHaveFiles, "after the interruption: every filesystem image has its file")
        #expect(seen.resumedExit == 0, "the second run: \(seen.resumedOutput)")
        #expect(
            seen.resumedOutput.contains("images migrate: done, \(images.count - seen.movedAtInterruption) moved to \(target)"),
            "\(seen.resumedOutput)")
        let problems = log.problems.withLock { $0 }
        #expect(problems.isEmpty, "\(problems.count) bad downloads: \(problems.prefix(10).joined(separator: "; "))")
        let cutShort = log.cutShort.withLock { $0 }
        #expect(cutShort.isEmpty, "\(cutShort.count) downloads cut short: \(cutShort.prefix(5).joined(separator: "; "))")
        print(
            "ImagesProcessTests: migrate to \(target) interrupted by signal \(signal) at \(seen.movedAtInterruption)/\(images.count) moved; "
                + "\(log.completed.load(ordering: .relaxed)) downloads, \(problems.count) bad, \(cutShort.count) cut short")

        // Everything in the target storage, nothing left in the old one.
        #expect(try deployment.rows().allSatisfy { $0.storage == target })
        if target == "filesystem" {
            #expect(try deployment.dataRows().isEmpty, "no bytes left in image_data")
            #expect(try deployment.files() == Set(images.map(\.id)))
        } else {
            #expect(try deployment.dataRows() == Set(images.map(\.id)))
            // The signal may land between an image's commit and the removal of its file (the test
            // signals as soon as it sees a commit): that one file is left for `serve`'s start-up
            // sweep, as documented. Never more.
            let left = try deployment.files()
            #expect(left.count <= 1, "at most the file of the image the signal interrupted: \(left.sorted().prefix(5))")
        }
        // A run killed while it wrote a file leaves that temporary file in `tmp`: neither `images
        // migrate` nor its second run removes it; only `serve`'s start-up sweep does, once it is an
        // hour old. At most that one, of the image it was moving (the oldest not moved: it moves
        // them oldest first); none for a move into the database, which writes no file.
        let parts = try deployment.temporaryFiles().filter { $0.hasSuffix(".part") }
        #expect(parts.count <= (target == "filesystem" ? 1 : 0), "temporary files left: \(parts)")
        let interrupted = rows[min(seen.movedAtInterruption, rows.count - 1)].id
        #expect(parts.allSatisfy { $0.hasPrefix(interrupted + ".") }, "temporary files left: \(parts); \(interrupted) was being moved")
        print("ImagesProcessTests: migrate to \(target): \(parts.count) temporary file(s) left in tmp after the second run")
        // Every image byte-for-byte, with its ETag unchanged.
        for image in images {
            let reply = try Self.download(server.port, token, image.id)
            #expect(reply.status == 200)
            let whole = same(reply.body, image.bytes)
            #expect(whole, "image \(image.id) (\(image.bytes.count) bytes) after the migration: \(reply.body.count) bytes")
            #expect(reply.header("ETag") == image.etag)
        }
        #expect(try deployment.migrate(to: target).contains("done, 0 moved"))
    }

    /// A download from the database storage larger than one chunk reads its chunks as the client
    /// takes them. A client that reads slowly (a small receive buffer) is partway through when
    /// `images migrate` moves the image to the filesystem; it must still get the whole image.
    /// Known to fail: the next chunk is read from `image_data` by id, finds nothing, and the
    /// server closes the connection mid-body (the length announced can no longer be met).
    /// The image is 8 MB: on loopback the server's socket takes up to 4 MiB (`tcp_wmem`) at once,
    /// and the stall must leave chunks unread.
    @Test func aChunkedDownloadSurvivesItsImageMovingToTheFilesystem() throws {
        let deployment = try Deployment.make("slow_reader")
        defer { deployment.remove() }
        let server = try ExosphereProcessTests.serve([
            "--database-url", deployment.databaseURL, "--image-dir", deployment.imageDirectory,
            "--image-max-bytes", String(16 << 20), "--image-storage", "database",
        ])
        defer { server.signal(SIGTERM); _ = server.waitForExit(timeout: 10) }
        let token = try Self.register(server.port)
        let bytes = ImageScenarios.png(size: 8_000_000, seed: 77)
        let created = try Self.upload(server.port, token, bytes)
        try #require(created.status == 201)
        let id = try #require(created.json["id"]?.stringValue)

        let fd = try HTTPClient.connect(port: server.port, receiveBuffer: 4096)
        defer { close(fd) }
        let request = "GET /users/me/images/\(id) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(token)\r\nConnection: close\r\n\r\n"
        let requestBytes = Array(request.utf8)
        let sent = requestBytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        try #require(sent == requestBytes.count)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        func receive() -> Int {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { received += buffer[..<count] }
            return count
        }
        // The head and the first bytes of the body.
        while find(received, Array("\r\n\r\n".utf8)) == nil || received.count < 2048 {
            try #require(receive() > 0, "the head and the first bytes of the body")
        }
        let headEnd = try #require(find(received, Array("\r\n\r\n".utf8)))
        let head = String(decoding: received[..<headEnd], as: UTF8.self)
        #expect(head.hasPrefix("HTTP/1.1 200"), "\(head)")

        // Moved while the client is partway through.
        let output = try deployment.migrate(to: "filesystem")
        #expect(output.contains("done, 1 moved"), "\(output)")
        #expect(try deployment.rows().allSatisfy { $0.storage == "filesystem" })

        while receive() > 0 {}
        let body = Array(received[(headEnd + 4)...])
        print(
            "ImagesProcessTests: slow reader: \(body.count) of \(bytes.count) bytes after the image moved; "
                + "server log mentions 'stream body failed': \(server.stderr.contains("stream body failed"))")
        // What came is the image's beginning (computed outside `#expect`, which would print megabytes).
        let intact = same(body, Array(bytes.prefix(body.count)))
        #expect(intact, "the bytes received are the image's first \(body.count)")
        #expect(body.count == bytes.count, "\(body.count) of \(bytes.count) bytes")
        // A new download is whole.
        let whole = same(try Self.download(server.port, token, id).body, bytes)
        #expect(whole, "a new download after the move is the whole image")
    }
}
