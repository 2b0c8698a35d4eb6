import AWSSignature
import Cryptography
import Foundation
import ObjectStorage
import TestSupport
import Testing

/// The client against the real Ceph cluster the tests start (TestCeph): every operation, keys that
/// need encoding, pages, presigned URLs, both addressing styles, keep-alive, and boto3 reading
/// byte for byte what the client wrote (and the reverse).
@Suite(.testThreads) struct S3ClientTests {
    /// A client of a new bucket on the test cluster, the bucket created.
    static func client(pathStyle: Bool = true, _ adjust: (inout S3Configuration) -> Void = { _ in }) throws -> S3Client {
        let ceph = try TestCeph.shared()
        var configuration = S3Configuration(
            endpoint: pathStyle ? ceph.endpoint : "http://localhost:\(ceph.port)", bucket: ceph.uniqueBucketName("client"), pathStyle: pathStyle,
            credentials: AWSCredentials(accessKeyID: ceph.accessKeyID, secretAccessKey: ceph.secretAccessKey))
        // `rgw dns name = localhost`: bucket.localhost names the bucket, and resolves nowhere.
        if !pathStyle { configuration.address = "127.0.0.1" }
        adjust(&configuration)
        let client = try S3Client(configuration)
        try client.createBucketIfMissing()
        return client
    }

    static func randomBytes(_ count: Int, seed: UInt64 = 41) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
    }

    @Test func putGetHeadRangeNotModifiedAndDelete() throws {
        let client = try Self.client()
        let bytes = Self.randomBytes(2 << 20)
        let stored = try client.putObject("images/a/original", bytes, contentType: "image/png")
        #expect(stored.etag == Hex.encode(MD5.hash(bytes)))
        let whole = try client.getObject("images/a/original", verify: true)
        #expect(whole.status == .whole)
        #expect(whole.bytes == bytes)
        #expect(whole.etag == stored.etag)
        #expect(whole.contentType == "image/png")
        #expect(try client.headObject("images/a/original") == S3Object(etag: stored.etag, size: bytes.count, contentType: "image/png"))
        let part = try client.getObject("images/a/original", range: 10...19)
        #expect(part.status == .partial)
        #expect(part.bytes == Array(bytes[10...19]))
        #expect(part.totalSize == bytes.count)
        #expect(part.contentRange == "bytes 10-19/\(bytes.count)")
        #expect(try client.getObject("images/a/original", ifNoneMatch: stored.etag).status == .notModified)
        #expect(try client.getObject("images/a/original", ifNoneMatch: "0123").status == .whole)
        try client.deleteObject("images/a/original")
        #expect(throws: S3Error.self) { try client.getObject("images/a/original") }
        do {
            _ = try client.headObject("images/a/original")
            Issue.record("HEAD of a deleted object succeeded")
        } catch {
            #expect(error.code == .notFound)
        }
        // Gone already: no error.
        try client.deleteObject("images/a/original")
        try client.createBucketIfMissing()
        try client.checkBucket()
    }

    @Test func keysThatNeedEncodingAndPagesOfAListing() throws {
        let client = try Self.client()
        let keys = ["p/a b+c.jpg", "p/é/ü", "p/x%2Fy", "p/~tilde*star", "p/q?&=#", "p/1", "p/2"]
        for (index, key) in keys.enumerated() { try client.putObject(key, Array("object \(index)".utf8)) }
        for (index, key) in keys.enumerated() { #expect(try client.getObject(key).bytes == Array("object \(index)".utf8), "\(key)") }
        let first = try client.listObjects(prefix: "p/", maximumKeys: 3)
        #expect(first.objects.count == 3)
        #expect(first.nextContinuationToken != nil)
        let all = try client.listAllObjects(prefix: "p/", pageSize: 3)
        #expect(all.map(\.key) == keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        #expect(all.first { $0.key == "p/1" }?.size == "object 5".utf8.count)
        #expect(try client.listAllObjects(prefix: "nothing/").isEmpty)
        #expect(try client.boto3Keys(prefix: "p/") == all.map(\.key))
    }

    @Test func boto3ReadsByteForByteWhatTheClientWroteAndTheReverse() throws {
        let ceph = try TestCeph.shared()
        let client = try Self.client()
        let directory = try makeTemporaryDirectory("s3-boto3")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Self.randomBytes(3 << 20 + 17, seed: 7)
        let stored = try client.putObject("from-exosphere/é x.bin", bytes)
        let etag = try ceph.boto3(["get", client.configuration.bucket, "from-exosphere/é x.bin", directory + "/read"])
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/read")) == Data(bytes))
        #expect(etag == "\"\(stored.etag)\"\n")
        let other = Self.randomBytes(1 << 20, seed: 8)
        try Data(other).write(to: URL(fileURLWithPath: directory + "/write"))
        try ceph.boto3(["put", client.configuration.bucket, "from-boto3/b", directory + "/write"])
        #expect(try client.getObject("from-boto3/b", verify: true).bytes == other)
    }

    @Test func aPresignedGetWorksUntilItIsTamperedWith() throws {
        let ceph = try TestCeph.shared()
        let client = try Self.client()
        let directory = try makeTemporaryDirectory("s3-presigned")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let bytes = Self.randomBytes(100_000, seed: 9)
        try client.putObject("shared/a b.png", bytes, contentType: "image/png")
        let url = client.presignedGetURL("shared/a b.png", expires: 300)
        #expect(url.hasPrefix("\(ceph.endpoint)/\(client.configuration.bucket)/shared/a%20b.png?X-Amz-Algorithm=AWS4-HMAC-SHA256&"))
        #expect(!url.contains(ceph.secretAccessKey))
        #expect(try ceph.boto3(["fetch", url, directory + "/fetched"]) == "200\n")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/fetched")) == Data(bytes))
        let tampered = url.replacingOccurrences(of: "X-Amz-Expires=300", with: "X-Amz-Expires=600")
        #expect(try ceph.boto3(["fetch", tampered, directory + "/refused"]) == "403\n")
    }

    @Test func virtualHostAddressing() throws {
        let client = try Self.client(pathStyle: false)
        let bytes = Self.randomBytes(50_000, seed: 10)
        try client.putObject("v/k", bytes)
        #expect(try client.getObject("v/k").bytes == bytes)
        #expect(try client.listAllObjects(prefix: "v/").map(\.key) == ["v/k"])
        #expect(client.presignedGetURL("v/k", expires: 60).hasPrefix("http://\(client.configuration.bucket).localhost:"))
    }

    @Test func requestsShareOneKeptAliveConnection() throws {
        let client = try Self.client()
        for index in 0..<20 { try client.putObject("k/\(index)", [UInt8(index)]) }
        for index in 0..<20 { #expect(try client.getObject("k/\(index)").bytes == [UInt8(index)]) }
        let statistics = client.statistics
        #expect(statistics.connectionsOpened == 1)
        #expect(statistics.requests == 42)
        #expect(statistics.failures == 0)
    }

    /// `openObject` passes the body on in pieces: read to its end, its connection is kept for the
    /// next request; dropped half-read, its connection is closed, never lent again with the rest of
    /// a body on it.
    @Test func aStreamedBodyComesInPiecesAndLeavesItsConnectionClean() throws {
        let client = try Self.client()
        let bytes = Self.randomBytes(2 << 20, seed: 7)
        try client.putObject("s/big", bytes)
        try client.putObject("s/small", [1, 2, 3])
        let stream = try client.openObject("s/big")
        #expect(stream.length == bytes.count)
        #expect(stream.status == .whole)
        #expect(stream.etag == Hex.encode(MD5.hash(bytes)))
        var read: [UInt8] = []
        while true {
            let piece = try stream.read(maxBytes: 256 * 1024)
            if piece.isEmpty { break }
            #expect(piece.count <= 256 * 1024)
            read += piece
        }
        #expect(read == bytes)
        #expect(try client.getObject("s/small").bytes == [1, 2, 3])
        #expect(client.statistics.connectionsOpened == 1, "the connection of a body read whole is reused")

        let range = try client.openObject("s/big", range: 1_000_000...1_999_999)
        #expect(range.status == .partial)
        #expect(range.totalSize == bytes.count)
        #expect(try range.read(maxBytes: 1 << 20) == Array(bytes[1_000_000...1_999_999]))

        var dropped: S3ObjectStream? = try client.openObject("s/big")
        #expect(try dropped?.read(maxBytes: 1000) == Array(bytes.prefix(1000)))
        dropped = nil
        let opened = client.statistics.connectionsOpened
        #expect(try client.getObject("s/small").bytes == [1, 2, 3], "the next request does not read the dropped body's rest")
        #expect(try client.getObject("s/big").bytes == bytes)
        #expect(client.statistics.connectionsOpened == opened + 1, "the dropped body's connection was closed, not lent again")
        #expect(throws: S3Error.self) { try client.openObject("s/missing") }
    }

    /// The store checks the body against the SHA-256 the request signed: bytes changed on the way
    /// are refused, never stored.
    @Test func aBodyThatIsNotTheSignedOneIsRefused() throws {
        let client = try Self.client()
        let bytes = Self.randomBytes(100_000, seed: 9)
        do {
            try client.putObject("c/changed", bytes, sha256: SHA256.hash(bytes + [0]))
            Issue.record("the store took a body whose SHA-256 is not the signed one")
        } catch {
            #expect(error.code == .checksumMismatch, "\(String(reflecting: error))")
        }
        #expect(throws: S3Error.self) { try client.headObject("c/changed") }
    }

    /// Over https to the gateway's TLS endpoint, its certificate verified against the CA that
    /// signed it; refused against the system's trust store, which does not know that CA.
    @Test func httpsWithTheCertificateVerified() throws {
        let ceph = try TestCeph.shared()
        let client = try Self.client {
            $0.endpoint = ceph.tlsEndpoint
            $0.caFile = ceph.tlsCAFile
        }
        let bytes = Self.randomBytes(1 << 20, seed: 11)
        try client.putObject("tls/object", bytes)
        #expect(try client.getObject("tls/object", verify: true).bytes == bytes)
        let stream = try client.openObject("tls/object")
        var read: [UInt8] = []
        while true {
            let piece = try stream.read(maxBytes: 100_000)
            if piece.isEmpty { break }
            #expect(piece.count <= 100_000)
            read += piece
        }
        #expect(read == bytes)
        #expect(client.statistics.connectionsOpened == 1)

        var untrusted = client.configuration
        untrusted.caFile = nil
        do {
            try S3Client(untrusted).checkBucket()
            Issue.record("a certificate from an unknown CA was accepted")
        } catch {
            #expect(error.code == .unavailable, "\(String(reflecting: error))")
            #expect(String(reflecting: error).contains("certificate"), "\(String(reflecting: error))")
        }
    }

    @Test func aWrongSecretIsAccessDenied() throws {
        let client = try Self.client()
        var configuration = client.configuration
        configuration.credentials.secretAccessKey = "not-the-secret"
        do {
            try S3Client(configuration).putObject("x", [1])
            Issue.record("a wrong secret was accepted")
        } catch {
            #expect(error.code == .accessDenied)
            #expect(error.storeCode == "SignatureDoesNotMatch")
            #expect(!String(reflecting: error).contains("not-the-secret"))
        }
    }
}

extension S3Client {
    /// The keys under `prefix` as boto3 lists them.
    fileprivate func boto3Keys(prefix: String) throws -> [String] {
        try TestCeph.shared().boto3(["list", configuration.bucket, prefix]).split(separator: "\n").map(String.init)
    }
}
