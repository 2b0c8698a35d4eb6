import Foundation

extension Exosphere {
    /// How the client talks to the server.
    public struct Configuration: Sendable {
        /// How answers that say "try again" are retried.
        public var retryPolicy = RetryPolicy()
        /// How long a request may wait for data before it fails with `network_error` (at least
        /// one second on Linux, whose URL session would otherwise time out at once).
        public var timeoutInterval: TimeInterval = 30
        /// Sent as `User-Agent`, and shown in `Exosphere.sessions()` (e.g. "MyApp/1.2 iPhone");
        /// nil sends the platform's default.
        public var userAgent: String?
        /// Whether downloaded images are kept on disk.
        public var imageCacheEnabled = true
        /// Where downloaded images are kept; nil for a directory of the platform's caches
        /// directory named after the server.
        public var imageCacheDirectory: URL?
        /// The most bytes the image cache keeps; the least recently used images go first.
        public var imageCacheMaxBytes = 100 * 1024 * 1024

        /// The defaults: three retries, 30-second timeouts, the platform's user agent, a 100 MiB image cache.
        public init() {}
    }

    /// Which answers are tried again, how often, and how long the client waits.
    ///
    /// `503` (the server is at its limit or its database is unavailable) and `429` (throttled)
    /// come with `Retry-After`; the client waits that long and sends the request again, at most
    /// `maxRetries` times, and never waits longer than `maxRetryAfter` (a sign-in locked for 15
    /// minutes fails at once with `too_many_attempts` and its `retryAfter`). A connection that
    /// cannot be made is retried after `networkRetryDelay`, doubling each time. A write whose
    /// fate is unknown (`503 database_unavailable` to a `POST` or `PATCH`, or a connection lost
    /// after a `POST` was sent) is never repeated.
    public struct RetryPolicy: Sendable {
        /// Retries after the first attempt.
        public var maxRetries = 3
        /// The longest `Retry-After` the client waits for, in seconds; a longer one is thrown.
        public var maxRetryAfter: TimeInterval = 10
        /// The wait when a `503` or `429` has no `Retry-After`, in seconds.
        public var defaultRetryAfter: TimeInterval = 1
        /// The first wait after a connection failure, in seconds; doubled at each retry.
        public var networkRetryDelay: TimeInterval = 0.25

        /// A policy; the defaults are the documented ones.
        public init(
            maxRetries: Int = 3, maxRetryAfter: TimeInterval = 10, defaultRetryAfter: TimeInterval = 1,
            networkRetryDelay: TimeInterval = 0.25
        ) {
            self.maxRetries = maxRetries
            self.maxRetryAfter = maxRetryAfter
            self.defaultRetryAfter = defaultRetryAfter
            self.networkRetryDelay = networkRetryDelay
        }

        /// No retries: every `503`, `429` and connection failure is thrown at once.
        public static let never = RetryPolicy(maxRetries: 0)
    }
}
