import HTTP
import StructuredLogging
import Synchronization
import Threads

/// What every event loop of one server shares: configuration, routes, workers and counters.
final class ServerShared: Sendable {
    let configuration: ServerConfiguration
    let router: Router
    let workers: BoundedThreadPool
    let logger: Logger
    let accessLog: Logger
    let metrics: HTTPMetrics
    let overloadedResponse: [UInt8]
    /// `configuration.maxConnections`, or less where the open-file limit leaves less room.
    let maxConnections: Int
    private let openConnections = Atomic<Int>(0)
    /// Open connections by client address, for `maxConnectionsPerAddress`.
    private let connectionsByAddress = Mutex<[String: Int]>([:])
    /// Body bytes reserved by all connections, for `maxBufferedBodyBytes`.
    private let bufferedBodyBytes = Atomic<Int>(0)
    /// Accept failures for lack of descriptors: when the last was logged, and how many since.
    private let exhaustion = Mutex<(loggedAt: UInt64?, unlogged: Int)>((nil, 0))
    /// At most one log line per this interval about running out of descriptors.
    static let exhaustionLogInterval: UInt64 = 10_000_000_000

    init(configuration: ServerConfiguration, router: Router, logger: Logger, metrics: HTTPMetrics) {
        let fileLimit = System.raiseOpenFileLimit() ?? Int.max
        // Under a small limit the reserve shrinks with it (at most a quarter), so that a few
        // connections are still possible.
        let reserve = min(configuration.descriptorReserve, fileLimit / 4)
        let room = fileLimit == Int.max ? Int.max : max(1, fileLimit - reserve)
        maxConnections = min(configuration.maxConnections, room)
        if maxConnections < configuration.maxConnections {
            logger.warning(
                "max connections lowered to fit the open-file limit",
                [
                    "connections.max": String(maxConnections), "connections.configured": String(configuration.maxConnections),
                    "files.limit": String(fileLimit), "files.reserve": String(reserve),
                ])
        }
        self.configuration = configuration
        self.router = router
        self.logger = logger
        self.accessLog = configuration.accessLog ? logger : .silent
        self.metrics = metrics
        metrics.label(routes: router.routes)
        self.workers = BoundedThreadPool(
            name: "http-worker", threads: configuration.workerThreads,
            queueLimit: configuration.workerQueueLimit)
        metrics.attach(workers: workers)
        var bytes: [UInt8] = []
        var response = Problem.serviceUnavailable(detail: "The server, or this client, has too many open connections.").response()
        response.headers.add(name: "X-Request-Id", value: "-")
        ResponseSerializer.serialize(
            response, requestMethod: .get, keepAlive: false,
            date: HTTPDate.format(secondsSinceEpoch: System.wallClockSeconds()), into: &bytes)
        overloadedResponse = bytes
    }

    var openConnectionCount: Int { openConnections.load(ordering: .relaxed) }

    /// Notes that an event loop could not accept for lack of descriptors (or memory), and logs it
    /// once per `exhaustionLogInterval` with the number of failures since the last line.
    func noteAcceptExhaustion(_ error: SystemError, now: UInt64) {
        metrics.acceptExhausted()
        let report: Int? = exhaustion.withLock { state in
            state.unlogged += 1
            if let last = state.loggedAt, now &- last < ServerShared.exhaustionLogInterval { return nil }
            defer { state = (now, 0) }
            return state.unlogged
        }
        if let report {
            logger.error(
                "cannot accept connections: out of file descriptors or memory; pausing accepts",
                [
                    "error": error.description, "accept.failures": String(report),
                    "connections.open": String(openConnectionCount), "connections.max": String(maxConnections),
                ])
        }
    }

    func reserveConnection() -> Bool {
        let previous = openConnections.add(1, ordering: .relaxed).oldValue
        if previous >= maxConnections {
            openConnections.subtract(1, ordering: .relaxed)
            return false
        }
        metrics.connectionOpened()
        return true
    }

    /// Counts a connection from `address`; false (nothing counted) when that address has its
    /// share of connections already.
    func reserve(address: String) -> Bool {
        let limit = configuration.maxConnectionsPerAddress
        guard limit > 0, !configuration.unlimitedAddresses.contains(address) else { return true }
        return connectionsByAddress.withLock { counts in
            let open = counts[address, default: 0]
            guard open < limit else { return false }
            counts[address] = open + 1
            return true
        }
    }

    func release(address: String) {
        let limit = configuration.maxConnectionsPerAddress
        guard limit > 0, !configuration.unlimitedAddresses.contains(address) else { return }
        connectionsByAddress.withLock { counts in
            let open = counts[address, default: 1] - 1
            counts[address] = open > 0 ? open : nil
        }
    }

    /// Reserves `bytes` more of request bodies held at once; false (nothing reserved) past the cap.
    func reserveBodyBytes(_ bytes: Int) -> Bool {
        let total = bufferedBodyBytes.add(bytes, ordering: .relaxed).newValue
        if total > configuration.maxBufferedBodyBytes {
            bufferedBodyBytes.subtract(bytes, ordering: .relaxed)
            return false
        }
        return true
    }

    func releaseBodyBytes(_ bytes: Int) {
        if bytes > 0 { bufferedBodyBytes.subtract(bytes, ordering: .relaxed) }
    }

    var bodyBytesBuffered: Int { bufferedBodyBytes.load(ordering: .relaxed) }

    func releaseConnection() {
        openConnections.subtract(1, ordering: .relaxed)
        metrics.connectionClosed()
    }

    /// The body limit for a request head: the route's own, or the server's default.
    func bodyLimit(_ routes: RouteLookup) -> @Sendable (RequestHead) -> Int {
        { [configuration] head in
            if case .found(let route, _) = routes.match(head.method, head.path), let limit = route.bodyLimit?.forHead {
                return limit(head)
            }
            return configuration.limits.maxBodyBytes
        }
    }

    /// Whether a request head's route must admit it before its body is read.
    func needsAdmission(_ routes: RouteLookup) -> @Sendable (RequestHead) -> Bool {
        { head in
            if case .found(let route, _) = routes.match(head.method, head.path) { return route.admission != nil }
            return false
        }
    }

    /// What `body` returns, or the response its error maps to.
    func response(for route: Router.Route, _ context: RequestContext, _ body: () async throws -> Response) async -> Response {
        do {
            return try await body()
        } catch {
            return response(to: error, route: route, context)
        }
    }

    /// The response an error of a route's handler maps to; unknown errors are logged and become `500`.
    func response(to error: any Error, route: Router.Route, _ context: RequestContext) -> Response {
        if let error = error as? HTTPResponseError {
            let problem = error.problem
            if problem.status.code >= 500, problem.status != .serviceUnavailable {
                // A 500 says nothing to the client; the operator needs the error itself.
                context.logger.error("handler failed", ["http.route": route.pattern, "error": String(reflecting: error)])
            }
            return problem.response()
        }
        context.logger.error("handler failed", ["http.route": route.pattern, "error": String(reflecting: error)])
        return Problem.internalError.response()
    }

    func observe(route: Int, unmatchedMethod: String?, status: Int, nanoseconds: UInt64) {
        metrics.observe(route: route, unmatchedMethod: unmatchedMethod, status: status, nanoseconds: nanoseconds)
    }
}
