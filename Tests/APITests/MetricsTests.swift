@testable import API
import TestSupport
import Foundation
import Glibc
import HTTP
@testable import HTTPServer
import JSON
import StructuredLogging
import Postgres
import Cryptography
import Testing

/// The Prometheus text writer, and `/metrics` as a scraper sees it over a real socket.
@Suite(.testThreads) struct MetricsTests {
    // MARK: - PrometheusText

    @Test func writesFamilyHeaderAndSamples() {
        var text = PrometheusText()
        text.family("jobs_total", type: .counter, help: "Jobs run.")
        text.sample("jobs_total", ["queue": "mail", "state": "done"], 3)
        text.sample("jobs_total", 4)
        text.family("temperature", type: .gauge, help: "Degrees.")
        text.sample("temperature", 21.5)
        #expect(
            String(decoding: text.bytes, as: UTF8.self) == """
                # HELP jobs_total Jobs run.
                # TYPE jobs_total counter
                jobs_total{queue="mail",state="done"} 3
                jobs_total 4
                # HELP temperature Degrees.
                # TYPE temperature gauge
                temperature 21.5

                """)
    }

    @Test func escapesLabelValuesAndHelp() {
        #expect(PrometheusText.escapeLabelValue(#"a\b"c"# + "\nd") == #"a\\b\"c\nd"#)
        #expect(PrometheusText.escapeLabelValue("/users/{id} é") == "/users/{id} é")
        #expect(PrometheusText.escapeHelp(#"say "hi"\"# + "\n") == #"say "hi"\\\n"#)

        var text = PrometheusText()
        text.family("x", type: .untyped, help: "line one\nline two")
        text.sample("x", ["path": "q\"\n\\"], 1)
        #expect(
            String(decoding: text.bytes, as: UTF8.self) == #"""
                # HELP x line one\nline two
                # TYPE x untyped
                x{path="q\"\n\\"} 1

                """#)
    }

    @Test func formatsIntegersWithoutFractionAndDoublesThatParseBack() {
        var text = PrometheusText()
        text.sample("a", 0)
        text.sample("b", -7)
        text.sample("c", UInt64.max)
        text.sample("d", 1.0)
        text.sample("e", Double.infinity)
        #expect(String(decoding: text.bytes, as: UTF8.self) == "a 0\nb -7\nc 18446744073709551615\nd 1.0\ne +Inf\n")

        #expect(PrometheusText.format(.infinity) == "+Inf")
        #expect(PrometheusText.format(-.infinity) == "-Inf")
        #expect(PrometheusText.format(.nan) == "NaN")
        #expect(PrometheusText.format(0.1) == "0.1")
        #expect(PrometheusText.format(0.0005) == "0.0005")
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [0, -0.0, 0.1, 1.0 / 3, 1e-5, 123_456_789.123, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -2.5e-300]
        for _ in 0..<1000 {
            // Random sign and fraction with a random finite exponent.
            let exponent: UInt64 = UInt64.random(in: 0..<0x7FF) << 52
            let bits: UInt64 = generator.next() & ~(UInt64(0x7FF) << 52)
            values.append(Double(bitPattern: bits | exponent))
        }
        for value in values {
            let text = PrometheusText.format(value)
            #expect(Double(text) == value, "\(value) written as \(text)")
            #expect(!text.contains(" "))
        }
    }

    @Test func writesCumulativeHistogramWithInfSumAndCount() {
        var text = PrometheusText()
        text.family("latency_seconds", type: .histogram, help: "Latency.")
        text.histogram("latency_seconds", ["route": "/a"], bounds: [0.5, 1], cumulativeCounts: [1, 2], count: 3, sum: 2.25)
        #expect(
            String(decoding: text.bytes, as: UTF8.self) == """
                # HELP latency_seconds Latency.
                # TYPE latency_seconds histogram
                latency_seconds_bucket{route="/a",le="0.5"} 1
                latency_seconds_bucket{route="/a",le="1.0"} 2
                latency_seconds_bucket{route="/a",le="+Inf"} 3
                latency_seconds_sum{route="/a"} 2.25
                latency_seconds_count{route="/a"} 3

                """)
    }

    @Test func validatesNames() {
        #expect(PrometheusText.isValidMetricName("exosphere_http:rate5m"))
        #expect(PrometheusText.isValidMetricName("_x"))
        #expect(!PrometheusText.isValidMetricName(""))
        #expect(!PrometheusText.isValidMetricName("1x"))
        #expect(!PrometheusText.isValidMetricName("a-b"))
        #expect(PrometheusText.isValidLabelName("le"))
        #expect(!PrometheusText.isValidLabelName("a:b"))
    }

    // MARK: - MetricsController

    /// Series of one route that differ only by status share one histogram; unmatched requests are "-".
    @Test func histogramSumsStatusesOfARoute() throws {
        var router = Router()
        router.get("/items/{id}") { _, _ in Response() }
        let metrics = HTTPMetrics()
        metrics.label(routes: router.routes)
        metrics.observe(route: 0, unmatchedMethod: nil, status: 200, nanoseconds: 300_000)
        metrics.observe(route: 0, unmatchedMethod: nil, status: 404, nanoseconds: 20_000_000)
        metrics.observe(route: -1, unmatchedMethod: "DELETE", status: 404, nanoseconds: 1_000)
        let pool = PostgresPool(
            configuration: try PostgresConfiguration(connectionString: "host=/nonexistent port=1 dbname=metrics_tests"),
            size: 3)
        defer { pool.close() }
        let scrape = Scrape(
            MetricsController(http: metrics, database: pool, hashing: nil, accounts: nil, images: nil, pipelines: nil, mail: nil).exposition().bytes)

        #expect(scrape[#"exosphere_http_requests_total{route="/items/{id}",method="GET",status="200"}"#] == "1")
        #expect(scrape[#"exosphere_http_requests_total{route="/items/{id}",method="GET",status="404"}"#] == "1")
        #expect(scrape[#"exosphere_http_requests_total{route="-",method="DELETE",status="404"}"#] == "1")
        let route = #"route="/items/{id}",method="GET""#
        #expect(scrape["exosphere_http_request_duration_seconds_count{\(route)}"] == "2")
        let expectedSum: Double = 300_000 / 1e9 + 20_000_000 / 1e9
        #expect(scrape["exosphere_http_request_duration_seconds_sum{\(route)}"].flatMap(Double.init) == expectedSum)
        #expect(scrape["exosphere_http_request_duration_seconds_bucket{\(route),le=\"0.0005\"}"] == "1")
        #expect(scrape["exosphere_http_request_duration_seconds_bucket{\(route),le=\"0.01\"}"] == "1")
        #expect(scrape["exosphere_http_request_duration_seconds_bucket{\(route),le=\"0.025\"}"] == "2")
        #expect(scrape["exosphere_http_request_duration_seconds_bucket{\(route),le=\"+Inf\"}"] == "2")
        #expect(scrape.bucketBounds(of: "exosphere_http_request_duration_seconds", route) == Self.allBounds)
        #expect(scrape[#"exosphere_db_pool_size"#] == "3")
        #expect(scrape[#"exosphere_db_pool_connections{state="in_use"}"#] == "0")
        // Not attached to a server, not given a hashing pool: those families are left out, not zeroed.
        #expect(scrape.types["exosphere_http_workers"] == nil)
        #expect(scrape.types["exosphere_hashing_busy"] == nil)
        try scrape.checkEveryFamilyIsDeclared()
    }

    @Test func readsProcessFigures() {
        let figures = ProcessFigures.read()
        #expect((figures.residentBytes ?? 0) > 1 << 20)
        #expect((figures.cpuSeconds ?? 0) > 0)
        #expect((figures.openFileDescriptors ?? 0) >= 3)
        let now = Date().timeIntervalSince1970
        let start = figures.startTimeSeconds ?? 0
        let dayAgo = now - 24 * 3600
        #expect(start > dayAgo, "process_start_time_seconds \(start), now \(now)")
        #expect(start <= now + 1, "process_start_time_seconds \(start), now \(now)")
    }

    // MARK: - End to end

    /// A running application on port 0: requests of several kinds, then a scrape over a real socket.
    @Test func scrapeCountsRequestsByRoutePattern() throws {
        let server = try TestServer("metrics") { $0.server.workerThreads = 2 }
        defer { server.shutdown() }
        let configuration = server.app.configuration
        let port = server.port

        #expect(try Self.exchange(port: port, "GET", "/healthz").status == 200)
        #expect(try Self.exchange(port: port, "GET", "/healthz").status == 200)
        #expect(try Self.exchange(port: port, "GET", "/no/such/path-7f3a").status == 404)
        #expect(try Self.exchange(port: port, "GET", "/users/signin").status == 405)
        let registered = try Self.exchange(
            port: port, "POST", "/users",
            body: #"{"email":"metrics@example.com","password":"correct horse battery"}"#)
        #expect(registered.status == 201)
        let token = try #require(try JSONParser.parse(registered.body)["accessToken"]?.stringValue)
        let sessionID = "0b9a3c4e-2f1d-4e5a-9c8b-7d6e5f4a3b2c"
        #expect(try Self.exchange(port: port, "DELETE", "/users/me/sessions/\(sessionID)", token: token).status == 404)

        // Requests are counted once their response is out, which the client may see first; a
        // connection the client closed, once its loop has seen the close.
        var metrics = try Self.exchange(port: port, "GET", "/metrics")
        var scrapes = 1
        func settled(_ metrics: (status: Int, head: String, body: String)) -> Bool {
            metrics.body.contains(#"route="/users/me/sessions/{id}""#)
                && Scrape(Array(metrics.body.utf8))["exosphere_http_connections_open"] == "1"
        }
        for _ in 0..<100 where !settled(metrics) {
            usleep(10_000)
            metrics = try Self.exchange(port: port, "GET", "/metrics")
            scrapes += 1
        }
        #expect(metrics.status == 200)
        #expect(metrics.head.contains("Content-Type: text/plain; version=0.0.4; charset=utf-8"))
        let scrape = Scrape(Array(metrics.body.utf8))
        try scrape.checkEveryFamilyIsDeclared()

        let requests = "exosphere_http_requests_total"
        #expect(scrape[#"\#(requests){route="/healthz",method="GET",status="200"}"#] == "2")
        #expect(scrape[#"\#(requests){route="-",method="GET",status="404"}"#] == "1")
        #expect(scrape[#"\#(requests){route="-",method="GET",status="405"}"#] == "1")
        #expect(scrape[#"\#(requests){route="/users",method="POST",status="201"}"#] == "1")
        #expect(scrape[#"\#(requests){route="/users/me/sessions/{id}",method="DELETE",status="404"}"#] == "1")
        // A scrape is counted after its own response, so it sees only the ones before it.
        #expect(scrape[#"\#(requests){route="/metrics",method="GET",status="200"}"#] == (scrapes > 1 ? String(scrapes - 1) : nil))
        // Labels carry patterns, never the concrete paths.
        #expect(!metrics.body.contains(sessionID))
        #expect(!metrics.body.contains("/no/such"))

        let duration = "exosphere_http_request_duration_seconds"
        #expect(scrape[#"\#(duration)_count{route="/healthz",method="GET"}"#] == "2")
        #expect(scrape[#"\#(duration)_bucket{route="/healthz",method="GET",le="+Inf"}"#] == "2")
        #expect(scrape[#"\#(duration)_count{route="-",method="GET"}"#] == "2")
        #expect(scrape.bucketBounds(of: duration, #"route="/healthz",method="GET""#) == Self.allBounds)
        let healthzBuckets = scrape.bucketCounts(of: duration, #"route="/healthz",method="GET""#)
        #expect(healthzBuckets == healthzBuckets.sorted(), "buckets are cumulative")

        #expect(scrape["exosphere_http_requests_in_flight"] == "1", "the scrape itself")
        #expect(scrape["exosphere_http_connections_open"] == "1")
        #expect(scrape["exosphere_http_connections_accepted_total"].flatMap(Int.init) == 6 + scrapes)
        // The scrape itself is busy; the worker of the previous request may not have booked
        // itself idle yet (its response goes out before it does).
        let busy = scrape[#"exosphere_http_workers{state="busy"}"#].flatMap(Int.init) ?? 0
        let idle = scrape[#"exosphere_http_workers{state="idle"}"#].flatMap(Int.init) ?? 0
        #expect(busy >= 1, "the scrape itself")
        #expect(busy + idle == configuration.server.workerThreads)
        #expect(scrape["exosphere_http_worker_queue_length"] == "0")
        #expect(scrape["exosphere_http_worker_rejected_total"] == "0")
        #expect(scrape["exosphere_signin_failures_total"] == "0")
        #expect(scrape[#"exosphere_throttled_total{throttle="signin"}"#] == "0")

        #expect(scrape["exosphere_db_pool_size"] == String(configuration.databasePoolSize))
        #expect(scrape[#"exosphere_db_pool_connections{state="in_use"}"#] == "0")
        #expect((scrape[#"exosphere_db_pool_connections{state="idle"}"#].flatMap(Int.init) ?? 0) >= 1)
        #expect((scrape["exosphere_db_pool_connections_created_total"].flatMap(Int.init) ?? 0) >= 1)
        #expect(scrape["exosphere_db_pool_waiting"] == "0")
        #expect(scrape["exosphere_db_pool_connections_failed_total"] == "0")
        #expect(scrape["exosphere_db_pool_connections_timeouts_total"] == "0")
        #expect(scrape["exosphere_db_pool_failing"] == "0")
        #expect(scrape["exosphere_db_pool_failed_fast_total"] == "0")

        // Registration hashed one password on the application's hashing pool.
        #expect(scrape["exosphere_hashing_completed_total"] == "1")
        #expect(scrape["exosphere_hashing_busy"] == "0")
        #expect(scrape["exosphere_hashing_queue_length"] == "0")
        #expect(scrape["exosphere_hashing_rejected_total"] == "0")

        #expect(scrape[#"exosphere_build_info{version="\#(Application.version)"}"#] == "1")
        #expect((scrape["process_resident_memory_bytes"].flatMap(Int.init) ?? 0) > 0)
        #expect((scrape["process_open_fds"].flatMap(Int.init) ?? 0) > 0)
        #expect((scrape["process_cpu_seconds_total"].flatMap(Double.init) ?? 0) > 0)
        #expect(scrape.types["process_start_time_seconds"] == "gauge")
        #expect(scrape.types[requests] == "counter")
        #expect(scrape.types[duration] == "histogram")

        let head = try Self.exchange(port: port, "HEAD", "/metrics")
        #expect(head.status == 200 && head.body.isEmpty)
    }

    // MARK: - Helpers

    /// The `le` bounds every histogram series has: the configured ones, then `+Inf`.
    private static let allBounds: [Double] = HTTPMetrics.bucketBounds + [Double.infinity]

    /// One request over a fresh connection with `Connection: close`.
    private static func exchange(
        port: Int, _ method: String, _ path: String, body: String? = nil,
        token: String? = nil
    ) throws -> (status: Int, head: String, body: String) {
        var headers: [(String, String)] = []
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        let reply = try HTTPClient.send(port: port, method: method, target: path, headers: headers, body: body.map { Array($0.utf8) })
        return (
            reply.status, reply.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\r\n"),
            String(decoding: reply.body, as: UTF8.self)
        )
    }
}

/// A scrape read line by line: enough of the format to look samples up by their exact series text.
private struct Scrape {
    /// `name{labels}` as written, to the value as written.
    var samples: [String: String] = [:]
    /// Series in the order written.
    var order: [String] = []
    /// Family name to its `# TYPE`.
    var types: [String: String] = [:]
    var helps: Set<String> = []
    /// Sample names whose family had not been declared by a `# TYPE` above them.
    var undeclared: [String] = []

    init(_ bytes: [UInt8]) {
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                types[String(parts[2])] = String(parts[3])
            } else if line.hasPrefix("# HELP ") {
                helps.insert(String(line.split(separator: " ")[2]))
            } else if let space = line.lastIndex(of: " ") {
                let series = String(line[..<space])
                samples[series] = String(line[line.index(after: space)...])
                order.append(series)
                let name = String(series.prefix { $0 != "{" })
                if !declares(name) { undeclared.append(name) }
            }
        }
    }

    subscript(series: String) -> String? { samples[series] }

    /// Every sample belongs to a family with `# HELP` and `# TYPE` written before it.
    func checkEveryFamilyIsDeclared() throws {
        if !undeclared.isEmpty { throw TestFailure("samples without # TYPE: \(undeclared)") }
        let withoutHelp = Set(types.keys).subtracting(helps)
        if !withoutHelp.isEmpty { throw TestFailure("families without # HELP: \(withoutHelp)") }
    }

    /// The `le` values of a histogram series, in the order written.
    func bucketBounds(of name: String, _ labels: String) -> [Double] {
        buckets(of: name, labels).map { $0.bound }
    }

    func bucketCounts(of name: String, _ labels: String) -> [Int] {
        buckets(of: name, labels).map { $0.count }
    }

    private func buckets(of name: String, _ labels: String) -> [(bound: Double, count: Int)] {
        let prefix = "\(name)_bucket{\(labels),le=\""
        return order.filter { $0.hasPrefix(prefix) }.map { series in
            let bound = series.dropFirst(prefix.count).dropLast(2)
            return (bound == "+Inf" ? .infinity : Double(bound) ?? .nan, Int(samples[series]!) ?? -1)
        }
    }

    private func declares(_ name: String) -> Bool {
        if types[name] != nil { return true }
        for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
            if types[String(name.dropLast(suffix.count))] == "histogram" { return true }
        }
        return false
    }
}

/// `--metrics-listen`: `/metrics` on the operator's listener only.
@Suite(.testThreads, .liveServer("metrics_listener", { $0.metricsListen = ("127.0.0.1", 0) }))
struct MetricsListenerTests {
    let server: TestServer
    init() throws { server = try #require(TestServer.current) }

    @Test func metricsAreServedOnTheirOwnListenerAndNotWithTheAPI() throws {
        #expect(try server.send("GET", "/healthz").status == 200)
        #expect(try server.send("GET", "/metrics").status == 404)
        let port = try #require(server.app.metricsServer?.port)
        #expect(port != server.port)
        let scrape = try HTTPClient.send(port: port, method: "GET", target: "/metrics", headers: [], body: nil)
        #expect(scrape.status == 200)
        // The figures are the API listener's.
        #expect(scrape.text.contains(#"exosphere_http_requests_total{route="/healthz",method="GET",status="200"}"#))
        #expect(try HTTPClient.send(port: port, method: "GET", target: "/healthz", headers: [], body: nil).status == 404)
    }
}
