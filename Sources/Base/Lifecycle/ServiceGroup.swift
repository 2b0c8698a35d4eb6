import StructuredLogging
import Synchronization

/// The services of a process, in the order they started, stopped in reverse: on shutdown, and
/// on a start that failed part-way alike, so that a failed start leaves nothing running (no
/// thread, no connection, no helper process) and a service always stops before what it uses.
///
/// A service joins the group once it runs (`started`), or by starting through it (`start`):
///
///     let services = ServiceGroup(logger: logger)
///     do {
///         let database = try services.start("database") { try Database.start(…) } stop: { $0.shutdown() }
///         try services.start("http", server.start, stop: server.shutdown)
///     } catch {
///         services.shutdown()  // the database stops; the server never started
///         throw error
///     }
public final class ServiceGroup: Sendable {
    private struct Running {
        let name: String
        let stop: @Sendable () -> Void
    }

    private let running = Mutex<[Running]>([])
    private let logger: Logger

    public init(logger: Logger = .silent) {
        self.logger = logger
    }

    /// Notes a service that runs now: `shutdown` stops it, before every service noted earlier.
    public func started(_ name: String, stop: @escaping @Sendable () -> Void) {
        running.withLock { $0.append(Running(name: name, stop: stop)) }
        logger.debug("service started", ["service": name])
    }

    /// Makes and starts a service with `make`; once it returns, the service is noted with `stop`.
    /// What `make` throws is rethrown, and nothing is noted.
    public func start<Service>(
        _ name: String, _ make: () throws -> Service, stop: @escaping @Sendable (Service) -> Void
    ) throws -> Service where Service: Sendable {
        let service = try make()
        started(name) { stop(service) }
        return service
    }

    /// Runs `start`; once it returns, the service is noted with `stop`.
    public func start(_ name: String, _ start: () throws -> Void, stop: @escaping @Sendable () -> Void) throws {
        try start()
        started(name, stop: stop)
    }

    /// The services running, in the order they started.
    public var names: [String] { running.withLock { $0.map(\.name) } }

    /// Stops every running service, the last started first. Later calls stop only what started since.
    public func shutdown() {
        while let service = running.withLock({ $0.popLast() }) {
            service.stop()
            logger.debug("service stopped", ["service": service.name])
        }
    }
}
