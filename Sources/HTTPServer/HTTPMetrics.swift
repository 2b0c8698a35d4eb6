import Synchronization

/// Request counters and latency histograms by route, for `/metrics`.
public final class HTTPMetrics: Sendable {
    /// Upper bounds of the latency buckets, in seconds.
    public static let bucketBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// One series: requests of a route, method and status.
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

    private let series = Mutex<[Series: Histogram]>([:])
    private let inFlight = Atomic<Int>(0)
    private let openConnections = Atomic<Int>(0)
    private let acceptedConnections = Atomic<Int>(0)

    public init() {}

    func observe(route: String, method: String, status: Int, nanoseconds: UInt64) {
        let seconds = Double(nanoseconds) / 1e9
        series.withLock { all in
            let key = Series(route: route, method: method, status: status)
            var histogram = all[key] ?? Histogram()
            histogram.count += 1
            histogram.sumSeconds += seconds
            for (index, bound) in HTTPMetrics.bucketBounds.enumerated() where seconds <= bound {
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

    /// A consistent copy of every series.
    public var snapshot: [Series: Histogram] { series.withLock { $0 } }
    public var requestsInFlight: Int { inFlight.load(ordering: .relaxed) }
    public var connectionsOpen: Int { openConnections.load(ordering: .relaxed) }
    public var connectionsAccepted: Int { acceptedConnections.load(ordering: .relaxed) }
}
