import HTTP
import Threads

/// How the HTTP server listens and what it tolerates; every field has a production default.
public struct ServerConfiguration: Sendable {
    public var host: String = "127.0.0.1"
    /// 0 picks a free port (tests); the bound port is reported by `Server.port`.
    public var port: Int = 8080
    /// Event-loop threads; each has its own `SO_REUSEPORT` listening socket. Two per core: measured
    /// faster than one on plain HTTP, and each loop's pipelined database connection is then one more
    /// PostgreSQL backend working for it.
    public var eventLoops: Int = 2 * System.coreCount
    /// Threads that run handlers that may block (database, hashing).
    public var workerThreads: Int = 32
    /// Requests waiting for a worker beyond which new ones get a fast `503`.
    public var workerQueueLimit: Int = 1024
    public var limits: HTTPLimits = .default
    public var headerTimeout: Duration = .seconds(10)
    public var idleTimeout: Duration = .seconds(75)
    public var bodyTimeoutGrace: Duration = .seconds(10)
    public var minBodyBytesPerSecond: Int = 1024
    /// A body whose bytes stop coming for this long is cut with `408`.
    public var bodyStallTimeout: Duration = .seconds(10)
    /// A request must have arrived whole (head and body) this long after its first byte.
    public var requestTimeout: Duration = .seconds(60)
    /// The same for an upload (a route that allows a body beyond `limits.maxBodyBytes`).
    public var uploadTimeout: Duration = .seconds(900)
    /// How long a request on the worker pool has for its answer, from its dispatch: its wait for a
    /// worker, a database connection, each round trip and a password hash all end by then (each
    /// also keeps its own bound), with a `503` (`RequestDeadline`). Below the timeout of a proxy in
    /// front (haproxy's `timeout server` is often 5 s), so that in an outage the client gets the
    /// server's `503` and `Retry-After`, not the proxy's `504`. `--request-timeout`.
    public var requestDeadline: Duration = .seconds(4)
    public var writeTimeout: Duration = .seconds(60)
    public var lingerTimeout: Duration = .seconds(2)
    /// A route with an admission check (authentication) runs it from the request head before
    /// reading a body larger than this, or a chunked one.
    public var admissionThreshold: Int = 64 * 1024
    /// Open connections beyond which new ones get a fast `503` and are closed. Lowered at start
    /// to the open-file limit less `descriptorReserve` when that is smaller.
    public var maxConnections: Int = 10_000
    /// Open connections from one client address beyond which new ones get a fast `503` (0: no
    /// limit); `unlimitedAddresses` (trusted proxies, which carry many clients) are exempt.
    public var maxConnectionsPerAddress: Int = 256
    public var unlimitedAddresses: Set<String> = []
    /// Request body bytes the whole server holds at once (being read, or with their handlers);
    /// a body that would take it past this is refused with `503`.
    public var maxBufferedBodyBytes: Int = 256 << 20
    /// File descriptors kept out of `maxConnections` for everything else the process opens:
    /// database connections, image files, epoll and eventfd descriptors, logs (at most a quarter
    /// of the open-file limit).
    public var descriptorReserve: Int = 256
    /// How long an event loop stops accepting after the process ran out of file descriptors
    /// (`EMFILE`, `ENFILE`), instead of retrying at once in a loop that spins.
    public var acceptPauseAfterExhaustion: Duration = .milliseconds(100)
    /// Whether every request gets an access-log line (at level info).
    public var accessLog: Bool = true
    /// How long a graceful shutdown waits for in-flight requests.
    public var drainTimeout: Duration = .seconds(10)

    public init() {}
}

extension ConnectionConfiguration {
    /// A connection's limits and timeouts from the server's configuration (kept apart from
    /// `ConnectionConfiguration` so that the state machine compiles alone, for fuzzing).
    init(_ server: ServerConfiguration) {
        limits = server.limits
        headerTimeout = server.headerTimeout.nanoseconds
        idleTimeout = server.idleTimeout.nanoseconds
        bodyGrace = server.bodyTimeoutGrace.nanoseconds
        minBodyBytesPerSecond = UInt64(max(1, server.minBodyBytesPerSecond))
        writeTimeout = server.writeTimeout.nanoseconds
        lingerTimeout = server.lingerTimeout.nanoseconds
        admissionThreshold = server.admissionThreshold
        bodyStallTimeout = server.bodyStallTimeout.nanoseconds
        requestTimeout = server.requestTimeout.nanoseconds
        uploadTimeout = server.uploadTimeout.nanoseconds
    }
}
