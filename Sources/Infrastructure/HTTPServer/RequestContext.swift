import StructuredLogging
import Threads

/// What a handler knows about its request beyond the request itself.
public struct RequestContext: Sendable {
    /// From the client's `X-Request-Id` when it is sane, else generated; on every log line.
    public let requestID: String
    /// Path parameters by name, percent-decoded: `{id}` in `/users/me/images/{id}`.
    public let parameters: [String: String]
    /// The peer's IP address.
    public let remoteAddress: String
    /// Set when the client closes its connection before the answer is written (for handlers that
    /// run off the event loop), so that expensive work not yet started can be dropped.
    public let cancellation: Cancellation?
    /// The event loop the request arrived on (nil outside a server): a handler's own I/O on it.
    public let loop: LoopContext?
    /// What the route's admission returned, when it ran (a body over the admission threshold).
    public let admitted: (any Sendable)?
    /// When the answer is due (`ServerConfiguration.requestDeadline` after the request was
    /// dispatched): the worker that runs the handler makes it its thread's `RequestDeadline`.
    public let deadline: RequestDeadline?
    private let baseLogger: Logger

    public init(
        requestID: String, parameters: [String: String] = [:], remoteAddress: String = "unknown",
        cancellation: Cancellation? = nil, deadline: RequestDeadline? = nil, loop: LoopContext? = nil,
        admitted: (any Sendable)? = nil, logger: Logger = .silent
    ) {
        self.loop = loop
        self.admitted = admitted
        self.requestID = requestID
        self.parameters = parameters
        self.remoteAddress = remoteAddress
        self.cancellation = cancellation
        self.deadline = deadline
        self.baseLogger = logger
    }

    /// A logger carrying `request.id`; made on demand, as most requests log nothing of their own.
    public var logger: Logger { baseLogger.with("request.id", requestID) }
}
