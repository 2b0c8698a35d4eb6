import HTTP

/// Limits and timeouts of one connection, in nanoseconds of the monotonic clock.
struct ConnectionConfiguration: Sendable {
    var limits: HTTPLimits
    /// Time from the first byte of a request head to its end (slowloris).
    var headerTimeout: UInt64
    /// Time an idle keep-alive connection stays open.
    var idleTimeout: UInt64
    /// A body may take this long plus one second per `minBodyBytesPerSecond` bytes received.
    var bodyGrace: UInt64
    var minBodyBytesPerSecond: UInt64
    /// Time a response write may make no progress.
    var writeTimeout: UInt64
    /// How long to keep reading after an error response before closing, so the client sees it.
    var lingerTimeout: UInt64
    /// Bodies larger than this (and chunked ones) are read only once their route admitted the head.
    var admissionThreshold: Int
    /// A body whose bytes stop coming for this long is cut (`408`).
    var bodyStallTimeout: UInt64
    /// From the first byte of a request's head to the end of its body, at most.
    var requestTimeout: UInt64
    /// The same for a route that allows bodies beyond the server's default (an upload).
    var uploadTimeout: UInt64
}
