import Foundation
import Glibc
import JSON
import TestSupport
import Testing

/// Downloads from the database storage are read chunk by chunk as the client takes them: a
/// hundred clients that do not read their 10 MiB images must not make the server hold a gigabyte.
@Suite(.testThreads, .drill) struct SlowReadersTests {
    static func residentKiB(_ pid: pid_t) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }

    /// Images the server's thumbnail helpers have been given so far, whatever came of them.
    static func thumbnailJobs(_ port: Int) throws -> Int {
        let metrics = try HTTPClient.send(port: port, method: "GET", target: "/metrics", headers: [], body: nil)
        return metrics.text.split(separator: "\n")
            .filter { $0.hasPrefix("exosphere_thumbnail_jobs_total{") }
            .compactMap { line in line.split(separator: " ").last.flatMap { Int($0) } }
            .reduce(0, +)
    }

    @Test func aHundredSlowReadersOfLargeImagesCostChunksNotImages() throws {
        let binary = try #require(ExosphereProcessTests.executable(), "the exosphere binary was not found next to the tests")
        let databaseURL = try TestCluster.cluster().createDatabase("slow_readers_\(getpid())")
        let child = try ExosphereProcessTests.Child(
            executable: binary.path,
            arguments: [
                "serve", "--host", "127.0.0.1", "--port", "0", "--database-url", databaseURL, "--image-storage", "database",
                "--access-log", "off", "--db-pool-size", "4", "--scrypt-ln", "14", "--scrypt-p", "5",
            ],
            environment: ["LOG_FORMAT": "logfmt"], port: 0)
        let port = try MultiInstanceTests.Deployment.listeningPort(child)
        defer {
            child.signal(SIGTERM)
            _ = child.waitForExit(timeout: 15)
        }
        let registered = try HTTPClient.send(
            port: port, method: "POST", target: "/users", headers: [("Content-Type", "application/json")],
            body: Array(#"{"email": "slow@example.com", "password": "slow readers 1"}"#.utf8))
        let token = try #require(registered.json["accessToken"]?.stringValue)
        let image = ImageScenarios.png(size: 10 << 20)
        let uploaded = try HTTPClient.send(
            port: port, method: "POST", target: "/users/me/images",
            headers: [("Content-Type", "image/png"), ("Authorization", "Bearer \(token)")], body: image)
        let id = try #require(uploaded.json["id"]?.stringValue, "upload: \(uploaded.status)")
        // After an upload `serve` reads the new image (all 10 MiB of it) and hands it to a
        // thumbnail helper, in the background. The baseline is taken once the helper has
        // answered (whatever it made of the file: the metric counts every outcome), so that this
        // work is neither in the growth nor half in the baseline.
        try waitUntil(timeout: .seconds(60), "the upload's background thumbnail job to be answered") {
            try Self.thumbnailJobs(port) >= 1
        }
        let before = try Self.residentKiB(child.pid)

        // A hundred clients ask for it and read nothing: a small receive buffer each.
        var readers: [Int32] = []
        defer { readers.forEach { close($0) } }
        for _ in 0..<100 {
            let fd = try HTTPClient.connect(port: port, receiveBuffer: 4096)
            readers.append(fd)
            let request = "GET /users/me/images/\(id) HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer \(token)\r\n\r\n"
            _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }
        // Every download has begun (each reader has bytes of its answer waiting, which it does not
        // read): the server now holds whatever it holds per download. Measured only then, the
        // growth cannot be small merely because the downloads had not started.
        var peak = before
        try waitUntil(timeout: .seconds(60), "every one of the 100 downloads to begin") {
            peak = max(peak, try Self.residentKiB(child.pid))
            return readers.allSatisfy { fd in
                var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                return poll(&entry, 1, 0) == 1
            }
        }
        peak = max(peak, try Self.residentKiB(child.pid))
        let grown = (peak - before) / 1024
        print("100 slow readers of a 10 MiB image: the server grew by \(grown) MiB (from \(before / 1024) MiB)")
        #expect(grown < 150, "the server grew by \(grown) MiB for 100 readers of 10 MiB")
        // The server still serves, and a reader that reads gets the whole image.
        let whole = try HTTPClient.send(
            port: port, method: "GET", target: "/users/me/images/\(id)",
            headers: [("Authorization", "Bearer \(token)")], body: nil)
        #expect(whole.status == 200)
        #expect(whole.body.count == image.count && whole.body == image)
        let tail = try HTTPClient.send(
            port: port, method: "GET", target: "/users/me/images/\(id)",
            headers: [("Authorization", "Bearer \(token)"), ("Range", "bytes=5000000-5600000")], body: nil)
        #expect(tail.status == 206)
        #expect(tail.body == Array(image[5_000_000...5_600_000]))
    }
}
