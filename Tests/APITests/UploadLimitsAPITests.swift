import API
import Foundation
import Images
import Synchronization
import TestSupport
import Testing

/// Per-user upload limits (`../shared/API.md`, "Sign-in routes, signed URLs, uploads"): uploads an
/// hour and bytes kept, in both storages, sent one by one and all at once.
@Suite(.testThreads, .serialized)
struct UploadLimitsAPITests {
    static let imageBytes = 4096

    static func server(_ name: String, storage: ImageStorage, rate: Int, quota: Int) throws -> TestServer {
        try TestServer(name) { configuration in
            configuration.images.storage = storage
            if storage == .filesystem { configuration.images.directory = try makeTemporaryDirectory("exo-upload-limits") }
            configuration.images.uploadsPerHour = rate
            configuration.images.quotaBytes = quota
            configuration.thumbnails.helpers = 0
        }
    }

    static func upload(_ server: TestServer, _ token: String, seed: UInt8) throws -> Reply {
        try ImageScenarios.upload(server, token, "image/png", ImageScenarios.png(size: imageBytes, seed: seed))
    }

    @Test(arguments: [ImageStorage.database, .filesystem])
    func theHourlyRateIsPerUserAndCountsOnlyStoredUploads(_ storage: ImageStorage) throws {
        let server = try Self.server("upload_rate_\(storage.rawValue)", storage: storage, rate: 3, quota: 0)
        defer { server.shutdown() }
        let account = try server.register()
        // A refused upload stores nothing and counts for nothing.
        #expect(try ImageScenarios.upload(server, account.token, "image/png", [0x89, 0x50]).status == 422)
        for seed in 0..<3 { #expect(try Self.upload(server, account.token, seed: UInt8(seed)).status == 201) }
        let refused = try Self.upload(server, account.token, seed: 9)
        #expect(refused.status == 429)
        #expect(refused.json["code"] == "too_many_uploads")
        #expect((Int(refused.header("Retry-After") ?? "") ?? 0) > 3000, "\(refused.headers)")
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images").json["images"]?.arrayValue?.count == 3)
        // Another user has an hour of their own.
        #expect(try Self.upload(server, try server.register().token, seed: 1).status == 201)
    }

    @Test(arguments: [ImageStorage.database, .filesystem])
    func theQuotaCountsTheBytesKept(_ storage: ImageStorage) throws {
        let server = try Self.server("upload_quota_\(storage.rawValue)", storage: storage, rate: 0, quota: 2 * Self.imageBytes + 100)
        defer { server.shutdown() }
        let account = try server.register()
        let first = try Self.upload(server, account.token, seed: 1)
        #expect(first.status == 201)
        #expect(try Self.upload(server, account.token, seed: 2).status == 201)
        let refused = try Self.upload(server, account.token, seed: 3)
        #expect(refused.status == 413)
        #expect(refused.json["code"] == "quota_exceeded")
        // Deleting makes room again.
        let id = try #require(first.json["id"]?.stringValue)
        #expect(try ImageScenarios.get(server, account.token, "/users/me/images/\(id)", method: "DELETE").status == 204)
        #expect(try Self.upload(server, account.token, seed: 3).status == 201)
    }

    /// Eight uploads at once against room for two, then against a rate of three: the limits hold.
    @Test(arguments: [ImageStorage.database, .filesystem])
    func uploadsSentAtOnceCannotPassTheLimitsTogether(_ storage: ImageStorage) throws {
        for (rate, quota, stored, refusal) in [(0, 2 * Self.imageBytes + 100, 2, 413), (3, 0, 3, 429)] {
            let server = try Self.server("upload_race_\(storage.rawValue)_\(refusal)", storage: storage, rate: rate, quota: quota)
            defer { server.shutdown() }
            let token = try server.register().token
            let statuses = Mutex<[Int]>([])
            try onThreads(8) { index in
                let status = try Self.upload(server, token, seed: UInt8(index)).status
                statuses.withLock { $0.append(status) }
            }
            let seen = statuses.withLock { $0 }.sorted()
            #expect(seen == Array(repeating: 201, count: stored) + Array(repeating: refusal, count: 8 - stored), "\(seen)")
            #expect(try ImageScenarios.get(server, token, "/users/me/images").json["images"]?.arrayValue?.count == stored)
        }
    }
}
