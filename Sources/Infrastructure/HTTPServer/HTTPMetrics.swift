import HTTP
import Synchronization
import Threads

/// Request counters and latency histograms by route and status, for `/metrics`.
///
/// Series are keyed by the route's position and the status code, so recording a request hashes
/// two integers; names are attached only when the metrics are read.
public final class HTTPMetrics: Sendable {
    /// Upper bounds of the latency buckets, in seconds.
    public static let bucketBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// One series: requests of a route (pattern and method) answered with one status.
    public struct Series: Sendable, Hashable {
        public let route: String
        public let method: String
        public let status: Int
    }

    /// Observations of one series.
    public struct Histogram: Sendable {
        public var count: Int = 0
        public var sumSeconds: Double = 0
        /// Cumulative counts per bound of `bucketBounds`.
        public var buckets: [Int] = Array(repeating: 0, count: HTTPMetrics.bucketBounds.count)
    }

    private struct Key: Hashable {
        let route: Int
        /// Only for requests no route matched; a route implies its method.
        let unmatchedMethod: String?
        let status: Int
    }

    private let series = Mutex<[Key: Histogram]>([:])
    private let routeLabels = Mutex<[(pattern: String, method: String)]>([])
    private let inFlight = Atomic<Int>(0)
    private let openConnections = Atomic<Int>(0)
    private let acceptedConnections = Atomic<Int>(0)
    private let exhaustedAccepts = Atomic<Int>(0)
    private let workerPool = Mutex<BoundedThreadPool?>(nil)

    public init() {}

    /// Names the routes whose positions `observe` receives.
    func label(routes: [Router.Route]) {
        routeLabels.withLock { labels in
            labels = routes.map { ($0.pattern, $0.method.rawValue) }
        }
    }

    /// Names the worker pool whose figures `workerStatistics` reads: the application builds these
    /// metrics (and the route that serves them) before the server creates its pool.
    func attach(workers: BoundedThreadPool) {
        workerPool.withLock { $0 = workers }
    }

    /// Records one answered request; `route` is the route's position, or -1 with the method when none matched.
    func observe(route: Int, unmatchedMethod: String?, status: Int, nanoseconds: UInt64) {
        let seconds = Double(nanoseconds) / 1e9
        series.withLock { all in
            // A client may send any token as a method: only known ones become labels, so the
            // number of series stays bounded.
            let method = unmatchedMethod.map { name in HTTPMethod.known.contains { $0.rawValue == name } ? name : "other" }
            let key = Key(route: route, unmatchedMethod: route < 0 ? method : nil, status: status)
            var histogram = all.removeValue(forKey: key) ?? Histogram()
            histogram.count += 1
            histogram.sumSeconds += seconds
            for index in HTTPMetrics.bucketBounds.indices where seconds <= HTTPMetrics.bucketBounds[index] {
                histogram.buckets[index] += 1
            }
            all[key] = histogram
        }
    }

    func requestStarted() { inFlight.add(1, ordering: .relaxed) }
    func requestFinished() { inFlight.subtract(1, ordering: .relaxed) }
    func connectionOpened() {
        openConnections.add(1, ordering: .relaxed)
        acceptedConnections.add(1, ordering: .relaxed)
    }
    func connectionClosed() { openConnections.subtract(1, ordering: .relaxed) }
    func acceptExhausted() { exhaustedAccepts.add(1, ordering: .relaxed) }

    /// A consistent copy of every series.
    public var snapshot: [Series: Histogram] {
        let labels = routeLabels.withLock { $0 }
        let all = series.withLock { $0 }
        var named: [Series: Histogram] = [:]
        for (key, histogram) in all {
            let label = labels.indices.contains(key.route) ? labels[key.route] : (pattern: "-", method: key.unmatchedMethod ?? "-")
            named[Series(route: label.pattern, method: label.method, status: key.status)] = histogram
        }
        return named
    }

    public var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }
    public var connectionsOpen: Int { openConnections.load(ordering: .relaxed) }
    public var connectionsAccepted: Int { acceptedConnections.load(ordering: .relaxed) }
    /// Accepts that failed for lack of file descriptors or memory (each pauses accepting briefly).
    public var acceptsExhausted: Int { exhaustedAccepts.load(ordering: .relaxed) }
    /// The figures of the worker pool of the server recording here; nil until a server uses these metrics.
    public var workerStatistics: BoundedThreadPool.Statistics? { workerPool.withLock { $0 }?.statistics }
}
