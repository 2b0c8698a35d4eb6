import Glibc
import HTTPServer
import Logging

/// The running service: the database, then the HTTP server; stopped in reverse order.
public final class Application: Sendable {
    public let configuration: Configuration
    public let logger: Logger
    public let database: Database
    public let server: HTTPServer

    /// Starts the database (migrating it) and the HTTP server; returns once the socket accepts.
    public init(configuration: Configuration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        database = try Database.start(configuration, logger: logger)
        server = HTTPServer(configuration: configuration.server, router: Application.routes(database: database), logger: logger)
        do {
            try server.start()
        } catch {
            database.shutdown()
            throw error
        }
        logger.notice("listening", ["http.host": configuration.server.host, "http.port": String(server.port)])
    }

    /// The route table, in one place.
    static func routes(database: Database) -> Router {
        var router = Router()
        HealthController(database: database).register(in: &router)
        return router
    }

    /// Drains the HTTP server, then closes the database.
    public func shutdown() {
        logger.notice("shutting down", ["drain.seconds": String(configuration.server.drainTimeout.components.seconds)])
        server.shutdown()
        database.shutdown()
        logger.notice("stopped")
    }

    /// Blocks SIGTERM and SIGINT in the calling thread, before any other thread starts, so every
    /// thread inherits the mask and `waitForSignal` is the only place they are seen.
    public static func blockTerminationSignals() {
        var signals = terminationSignals
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
    }

    /// Waits for SIGTERM or SIGINT and returns its name.
    public static func waitForSignal() -> String {
        var signals = terminationSignals
        var received: Int32 = 0
        sigwait(&signals, &received)
        return received == SIGTERM ? "SIGTERM" : "SIGINT"
    }

    private static var terminationSignals: sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        return signals
    }
}
