import StructuredLogging
import Threads

/// The HTTP/1.1 server: event loops that accept and parse, a worker pool that runs blocking handlers.
public final class Server: @unchecked Sendable {
    public let configuration: ServerConfiguration
    public let metrics: HTTPMetrics
    private let shared: ServerShared
    private var loops: [EventLoop] = []
    /// The ids of the event loops' threads, for tests (0 for one not running yet).
    var loopThreadIDs: [Int32] { loops.map { $0.threadID.load(ordering: .acquiring) } }
    /// The route table it serves.
    public var router: Router { shared.router }
    /// The port actually bound (differs from the configured one when that was 0).
    public private(set) var port: Int = 0

    public init(configuration: ServerConfiguration, router: Router, logger: Logger, metrics: HTTPMetrics = HTTPMetrics()) {
        self.configuration = configuration
        self.metrics = metrics
        self.shared = ServerShared(configuration: configuration, router: router, logger: logger, metrics: metrics)
    }

    /// Binds the listening sockets and starts the event loops; returns once the server accepts.
    public func start() throws {
        // The first socket fixes the port (0 picks one); the others join it through SO_REUSEPORT.
        let first = try System.listen(host: configuration.host, port: configuration.port, probeFirst: true)
        port = System.boundPort(first)
        var sockets = [first]
        for _ in 1..<max(1, configuration.eventLoops) {
            sockets.append(try System.listen(host: configuration.host, port: port))
        }
        for (index, socket) in sockets.enumerated() {
            loops.append(try EventLoop(index: index, listenFD: socket, shared: shared))
        }
        for loop in loops { loop.start() }
    }

    /// Open connections across all loops.
    public var openConnections: Int { shared.openConnectionCount }

    /// The worker pool's figures.
    public var workerStatistics: BoundedThreadPool.Statistics { shared.workers.statistics }

    /// Graceful shutdown: stop accepting, let in-flight requests finish with `Connection: close`,
    /// close idle connections, and return when all are closed or the drain timeout has passed.
    public func shutdown() {
        let deadline = monotonicNanoseconds() + configuration.drainTimeout.nanoseconds
        for loop in loops { loop.requestDrain(deadline: deadline) }
        for loop in loops { loop.join() }
        loops = []
        shared.workers.shutdown()
    }
}
