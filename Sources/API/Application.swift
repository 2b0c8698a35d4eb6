import Glibc
import HTTPServer
import Logging

/// The running service: builds the routes, starts the server, and stops it in reverse order.
public final class Application: Sendable {
    public let configuration: Configuration
    public let logger: Logger
    public let server: HTTPServer

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.server = HTTPServer(configuration: configuration.server, router: Application.routes(), logger: logger)
    }

    /// The route table, in one place.
    static func routes() -> Router {
        var router = Router()
        HealthController().register(in: &router)
        return router
    }

    /// Starts serving; returns once the socket accepts connections.
    public func start() throws {
        try server.start()
        logger.notice("listening", ["http.host": configuration.server.host, "http.port": String(server.port)])
    }

    /// Drains and stops.
    public func shutdown() {
        logger.notice("shutting down", ["drain.seconds": String(configuration.server.drainTimeout.components.seconds)])
        server.shutdown()
        logger.notice("stopped")
    }

    /// Blocks SIGTERM and SIGINT in the calling thread, so that every thread it starts afterwards
    /// inherits the mask and `runUntilSignalled`'s `sigwait` is the only place they are seen.
    ///
    /// Call it before `init`: the server's worker threads start there, and a signal delivered to one
    /// of them (one arriving during start-up or during the drain, say) would kill the process.
    public static func blockTerminationSignals() {
        var signals = terminationSignals
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    private static var terminationSignals: sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        return signals
    }

    /// Runs until SIGTERM or SIGINT, then shuts down gracefully; see `blockTerminationSignals()`.
    public func runUntilSignalled() throws {
        Application.blockTerminationSignals()
        var signals = Application.terminationSignals
        signal(SIGPIPE, SIG_IGN)
        try start()
        var received: Int32 = 0
        sigwait(&signals, &received)
        logger.notice("signal received", ["signal": received == SIGTERM ? "SIGTERM" : "SIGINT"])
        shutdown()
    }
}
