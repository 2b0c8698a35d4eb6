@testable import API
import Files
import Foundation
import Glibc
import TestSupport
import JSON
import Postgres
import Cryptography
import Synchronization
import Testing

/// The image storages across process lifetimes: the built binary killed with SIGKILL in the middle
/// of uploads, and `exosphere images migrate` in both directions, interrupted and resumed.
@Suite(.serialized) struct ImagesProcessTests {
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
            return try Child(executable: binary.path,
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
        func files() throws -> Set<String> {
            var ids: Set<String> = []
            for prefix in try FileSystem.entries(of: imageDirectory) where prefix.count == 2 {
                for name in try FileSystem.entries(of: imageDirectory + "/" + prefix) { ids.insert(name) }
            }
            return ids
        }

        func remove() { _ = try? FileManager.default.removeItem(atPath: imageDirectory) }
    }

    static func register(_ port: Int) throws -> String {
        let email = "images-\(UInt32.random(in: 0...UInt32.max))@example.com"
        let body = Array(#"{"email": "\#(email)", "password": "correct horse battery staple"}"#.utf8)
        let reply = try HTTPClient.send(port: port, method: "POST", target: "/users",
                                        headers: [("Content-Type", "application/json")], body: body)
        try #require(reply.status == 201, "register: \(reply.status) \(reply.text)")
        return try #require(reply.json["accessToken"]?.stringValue)
    }

    static func upload(_ port: Int, _ token: String, _ bytes: [UInt8]) throws -> Reply {
        try HTTPClient.send(port: port, method: "POST", target: "/users/me/images",
                            headers: [("Authorization", "Bearer \(token)"), ("Content-Type", "image/png")], body: bytes)
    }

    static func download(_ port: Int, _ token: String, _ id: String) throws -> Reply {
        try HTTPClient.send(port: port, method: "GET", target: "/users/me/images/\(id)",
                            headers: [("Authorization", "Bearer \(token)")], body: nil)
    }

    // MARK: - SIGKILL

    @Test func filesystemStorageSurvivesSIGKILLDuringUploads() throws {
        let deployment = try Deployment.make("kill")
        defer { deployment.remove() }
        var child = try deployment.serve("filesystem")
        let token = try Self.register(child.port)

        // Uploads on 6 threads until the process dies under them; the acknowledged ones are kept.
        let acknowledged = Mutex<[String: [UInt8]]>([:])
        let port = child.port
        let stop = Atomic<Bool>(false)
        let pid = child.pid
        onThreads(7) { index in
            if index == 6 {
                // Killed while the other threads are sending, once some uploads were acknowledged
                // (if none ever is, killed anyway, and the check of them below fails).
                _ = try? waitUntil(timeout: .seconds(60), "6 acknowledged uploads") { acknowledged.withLock { $0.count } >= 6 }
                kill(pid, SIGKILL)
                stop.store(true, ordering: .sequentiallyConsistent)
                return
            }
            var round = 0
            while !stop.load(ordering: .sequentiallyConsistent) {
                let bytes = ImageScenarios.png(size: 200_000 + index * 1000 + round, seed: UInt8(truncatingIfNeeded: index * 31 + round))
                round += 1
                guard let reply = try? Self.upload(port, token, bytes), reply.status == 201,
                      let id = reply.json["id"]?.stringValue else { continue }
                acknowledged.withLock { $0[id] = bytes }
            }
        }
        #expect(child.waitForExit(timeout: 10))
        #expect(child.killedBy == SIGKILL)
        let saved = acknowledged.withLock { $0 }
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
        // Every acknowledged upload is there, whole.
        for (id, bytes) in saved {
            let reply = try Self.download(child.port, token, id)
            #expect(reply.status == 200)
            #expect(same(reply.body, bytes), "image \(id) is whole after the kill")
        }
        // Every row (acknowledged or committed just before the kill) serves bytes matching its hash.
        for row in rows {
            let reply = try Self.download(child.port, token, row.id)
            #expect(reply.status == 200)
            #expect(SHA256.hash(reply.body) == row.sha256, "image \(row.id) serves what its row says")
        }
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

        // Killed at some point of the rest: every image is still whole in exactly one storage.
        let interrupted = try deployment.migration(to: "filesystem")
        usleep(150_000)
        interrupted.signal(SIGKILL)
        _ = interrupted.waitForExit(timeout: 10)
        rows = try deployment.rows()
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
}
