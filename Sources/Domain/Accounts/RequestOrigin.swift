import Threads

/// Who sent a request, as far as the accounts rules care: for throttles, security events and
/// dropping work for a client that has gone.
public struct RequestOrigin: Sendable {
    /// The client's address (canonical IP text, seen through trusted proxies), for security events.
    public var address: String
    /// The address as the throttles count it: an IPv6 address by its /64, since one host commonly
    /// holds a whole /64 and could otherwise spread its guesses over 2^64 counters.
    public var throttleAddress: String
    public var userAgent: String?
    /// Set when the client goes away before the answer is written.
    public var cancellation: Cancellation?
    /// An administrator's request: what it does appears in the user's activity as
    /// `"by": "administrator"`, without the operator's address or device.
    public var byAdministrator = false

    public init(address: String, throttleAddress: String? = nil, userAgent: String? = nil, cancellation: Cancellation? = nil) {
        self.address = address
        self.throttleAddress = throttleAddress ?? address
        self.userAgent = userAgent
        self.cancellation = cancellation
    }
}
