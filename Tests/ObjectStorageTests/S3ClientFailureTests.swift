import AWSSignature
import Cryptography
import ObjectStorage
import TestSupport
import Testing
import Threads

/// What the client does when the store is not there, hangs, lies or closes a kept-alive
/// connection; and which configurations it refuses before any request.
@Suite(.testThreads) struct S3ClientFailureTests {
    static let credentials = AWSCredentials(accessKeyID: "AKIAIOSFODNN7EXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")

    static func client(port: Int, _ adjust: (inout S3Configuration) -> Void = { _ in }) throws -> S3Client {
        var configuration = S3Configuration(endpoint: "http://127.0.0.1:\(port)", bucket: "images", pathStyle: true, credentials: credentials)
        adjust(&configuration)
        return try S3Client(configuration)
    }

    /// The code of the S3Error `body` throws; nil when it throws none.
    static func code(_ body: () throws -> Void) -> S3Error.Code? {
        do {
            try body()
            return nil
        } catch let error as S3Error {
            return error.code
        } catch {
            return S3Error.Code(rawValue: "not an S3Error: \(error)")
        }
    }

    @Test func aStoreThatIsNotThereIsUnavailableAtOnce() throws {
        let port = try LoopbackSocket()
        defer { port.close() }
        let client = try Self.client(port: port.port)
        let start = ContinuousClock.now
        #expect(Self.code { try client.putObject("k", [1]) } == .unavailable)
        #expect(ContinuousClock.now - start < .seconds(2))
    }

    @Test func aStoreThatHangsTimesOutWithinTheBound() throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let client = try Self.client(port: listener.port) { $0.timeout = .milliseconds(300) }
        let (outcome, silent) = listener.whileSilent {
            let start = ContinuousClock.now
            let code = Self.code { _ = try client.getObject("k") }
            return (code: code, elapsed: ContinuousClock.now - start)
        }
        #expect(silent)
        #expect(outcome.code == S3Error.Code.timeout)
        #expect(outcome.elapsed < .seconds(2))
    }

    /// A request's deadline bounds every wait of the client, whatever its own timeouts: a store
    /// that hangs is a timeout by the deadline, and after it nothing is attempted.
    @Test func theRequestsDeadlineBoundsEveryWait() throws {
        let listener = try SilentListener()
        defer { listener.close() }
        let client = try Self.client(port: listener.port) { $0.timeout = .seconds(20) }
        let (outcome, silent) = listener.whileSilent {
            RequestDeadline.with(.after(.milliseconds(400))) {
                let start = ContinuousClock.now
                let code = Self.code { _ = try client.getObject("k") }
                let late = Self.code { try client.putObject("k", [1]) }
                return (code: code, late: late, elapsed: ContinuousClock.now - start)
            }
        }
        #expect(silent)
        #expect(outcome.code == S3Error.Code.timeout)
        #expect(outcome.late == S3Error.Code.timeout)
        #expect(outcome.elapsed < .seconds(3))
    }

    @Test func anETagThatIsNotTheMD5OfTheBytesIsAChecksumMismatch() throws {
        let server = try CannedS3Server([.init(text: "HTTP/1.1 200 OK\r\nETag: \"00000000000000000000000000000000\"\r\nContent-Length: 0\r\n\r\n")])
        defer { server.close() }
        let client = try Self.client(port: server.port)
        #expect(Self.code { try client.putObject("k", Array("bytes".utf8)) } == .checksumMismatch)
        let head = try #require(server.requests.withLock { $0.first })
        #expect(head.contains("x-amz-content-sha256: \(SHA256.hexDigest(Array("bytes".utf8)))"))
    }

    @Test func theStoresOwnCodesBecomeStableCodes() throws {
        let error = { (status: String, code: String) in
            "HTTP/1.1 \(status)\r\nContent-Type: application/xml\r\nContent-Length: \(code.utf8.count + 37)\r\n\r\n<Error><Code>\(code)</Code></Error>\n"
                .replacingOccurrences(of: "Content-Length: \(code.utf8.count + 37)", with: "Content-Length: \(code.utf8.count + 29)")
        }
        let server = try CannedS3Server([
            .init(text: error("400 Bad Request", "BadDigest")), .init(text: error("404 Not Found", "NoSuchKey")),
            .init(text: error("503 Slow Down", "SlowDown")), .init(text: error("403 Forbidden", "RequestTimeTooSkewed")),
            .init(text: error("400 Bad Request", "InvalidArgument")),
        ])
        defer { server.close() }
        let client = try Self.client(port: server.port)
        #expect(Self.code { try client.putObject("k", [1]) } == .checksumMismatch)
        #expect(Self.code { _ = try client.getObject("k") } == .notFound)
        #expect(Self.code { _ = try client.getObject("k") } == .unavailable)
        #expect(Self.code { _ = try client.getObject("k") } == .accessDenied)
        #expect(Self.code { _ = try client.getObject("k") } == .rejected)
        #expect(server.connections.load(ordering: .relaxed) == 1)
    }

    /// A kept-alive connection the store closed while idle: the request goes again on a new one.
    @Test func aConnectionClosedWhileIdleIsReplacedUnseen() throws {
        let ok = "HTTP/1.1 200 OK\r\nETag: \"900150983cd24fb0d6963f7d28e17f72\"\r\nContent-Length: 3\r\n\r\nabc"
        let server = try CannedS3Server([.init(text: ok, closeAfter: true), .init(text: ok)])
        defer { server.close() }
        let client = try Self.client(port: server.port)
        #expect(try client.getObject("k").bytes == Array("abc".utf8))
        #expect(try client.getObject("k", verify: true).bytes == Array("abc".utf8))
        #expect(server.connections.load(ordering: .relaxed) == 2)
        #expect(client.statistics.failures == 0)
    }

    /// A store that closes in the middle of its answer (it crashed or restarted, as the drills
    /// make the RADOS Gateway do) is unavailable, worth a retry later, not a protocol error; and a
    /// streamed body cut short is too.
    @Test func aStoreThatClosesMidAnswerIsUnavailable() throws {
        let server = try CannedS3Server([
            .init(text: "HTTP/1.1 200 OK\r\nETag: \"900150983cd24fb0", closeAfter: true),
            .init(text: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", closeAfter: true),
            .init(text: "HTTP/1.1 200 OK\r\nContent-Length: 300000\r\n\r\nabc", closeAfter: true),
        ])
        defer { server.close() }
        let client = try Self.client(port: server.port)
        #expect(Self.code { try client.putObject("k", Array("abc".utf8)) } == .unavailable)
        #expect(Self.code { _ = try client.getObject("k") } == .unavailable)
        let stream = try client.openObject("k")
        #expect(stream.length == 300_000)
        #expect(Self.code { _ = try stream.read(maxBytes: 300_000) } == .unavailable)
    }

    @Test func configurationsThatCannotWorkAreRefusedBeforeAnyRequest() {
        let refused: [S3Configuration] = [
            S3Configuration(endpoint: "http://s3.example.com", bucket: "images", credentials: Self.credentials),
            S3Configuration(endpoint: "http://127.0.0.1:9000", bucket: "images", credentials: Self.credentials, address: "10.0.0.1"),
            S3Configuration(endpoint: "https://s3.example.com/base", bucket: "images", credentials: Self.credentials),
            S3Configuration(endpoint: "ftp://s3.example.com", bucket: "images", credentials: Self.credentials),
            S3Configuration(endpoint: "https://s3.example.com", bucket: "Images", credentials: Self.credentials),
            S3Configuration(endpoint: "https://s3.example.com", bucket: "a.b.c", credentials: Self.credentials),
            S3Configuration(endpoint: "https://s3.example.com", bucket: "ok", credentials: Self.credentials),
        ]
        for configuration in refused {
            #expect(Self.code { _ = try S3Client(configuration) } == .invalidConfiguration, "\(configuration.endpoint) \(configuration.bucket)")
        }
        #expect(
            Self.code {
                _ = try S3Client(S3Configuration(endpoint: "https://s3.example.com", bucket: "a.b.c", pathStyle: true, credentials: Self.credentials))
            } == nil)
        #expect(
            Self.code { _ = try S3Client(S3Configuration(endpoint: "http://[::1]:9000", bucket: "images", credentials: Self.credentials)) } == nil)
    }

    @Test func presignedURLsOfBothStyles() throws {
        let clock: @Sendable () -> Int64 = { 1_369_353_600 }
        var configuration = S3Configuration(endpoint: "https://s3.amazonaws.com", bucket: "examplebucket", credentials: Self.credentials)
        // The S3 documentation's example, as a client makes it.
        #expect(
            try S3Client(configuration, clock: clock).presignedGetURL("test.txt", expires: 86_400)
                == "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                + "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z"
                + "&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
                + "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")
        configuration.endpoint = "https://store.example.com:8443"
        configuration.pathStyle = true
        #expect(
            try S3Client(configuration, clock: clock).presignedGetURL("a b/c", expires: 60).hasPrefix(
                "https://store.example.com:8443/examplebucket/a%20b/c?X-Amz-Algorithm="))
    }
}
