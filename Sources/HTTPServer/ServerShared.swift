import HTTP
import Logging
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
    private let openConnections = Atomic<Int>(0)

    init(configuration: ServerConfiguration, router: Router, logger: Logger, metrics: HTTPMetrics) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        self.accessLog = configuration.accessLog ? logger : .silent
        self.metrics = metrics
        metrics.label(routes: router.routes)
        self.workers = BoundedThreadPool(name: "http-worker", threads: configuration.workerThreads,
                                         queueLimit: configuration.workerQueueLimit)
        metrics.attach(workers: workers)
        var bytes: [UInt8] = []
        var response = Problem.serviceUnavailable(detail: "The server has too many open connections.").response()
        response.headers.add(name: "X-Request-Id", value: "-")
        ResponseSerializer.serialize(response, requestMethod: .get, keepAlive: false,
                                     date: HTTPDate.format(secondsSinceEpoch: System.wallClockSeconds()), into: &bytes)
        overloadedResponse = bytes
    }

    var openConnectionCount: Int { openConnections.load(ordering: .relaxed) }

    func reserveConnection() -> Bool {
        let previous = openConnections.add(1, ordering: .relaxed).oldValue
        if previous >= configuration.maxConnections {
            openConnections.subtract(1, ordering: .relaxed)
            return false
        }
        metrics.connectionOpened()
        return true
    }

    func releaseConnection() {
        openConnections.subtract(1, ordering: .relaxed)
        metrics.connectionClosed()
    }

    /// The body limit for a request head: the route's own, or the server's default.
    var bodyLimit: @Sendable (RequestHead) -> Int {
        { [router, configuration] head in
            if case .found(let route, _) = router.match(method: head.method, path: head.path), let limit = route.bodyLimit {
                return limit(head)
            }
            return configuration.limits.maxBodyBytes
        }
    }

    /// Runs a handler, turning thrown errors into responses; unknown errors are logged and become `500`.
    func run(_ route: Router.Route, _ request: Request, _ context: RequestContext) -> Response {
        metrics.requestStarted()
        defer { metrics.requestFinished() }
        return response(for: route, context) { try route.handler(request, context) }
    }

    /// What `body` returns, or the response its error maps to.
    func response(for route: Router.Route, _ context: RequestContext, _ body: () throws -> Response) -> Response {
        do {
            return try body()
        } catch let error as HTTPResponseError {
            let problem = error.problem
            if problem.status.code >= 500, problem.status != .serviceUnavailable {
                // A 500 says nothing to the client; the operator needs the error itself.
                context.logger.error("handler failed", ["http.route": route.pattern, "error": String(reflecting: error)])
            }
            return problem.response()
        } catch {
            context.logger.error("handler failed", ["http.route": route.pattern, "error": String(reflecting: error)])
            return Problem.internalError.response()
        }
    }

    func observe(route: Int, unmatchedMethod: String?, status: Int, nanoseconds: UInt64) {
        metrics.observe(route: route, unmatchedMethod: unmatchedMethod, status: status, nanoseconds: nanoseconds)
    }
}
