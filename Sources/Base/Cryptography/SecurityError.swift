import COpenSSL

/// An error from the `Cryptography` module: a stable `code`, a generic `description`, and
/// details for operators in `debugDescription` that never contain passwords, hashes or tokens.
public struct SecurityError: Error, Sendable, Hashable, CustomStringConvertible,
    CustomDebugStringConvertible
{
    /// A stable, machine-readable error code.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        public var description: String { rawValue }

        /// The system's CSPRNG failed; no bytes were produced.
        case randomFailed
        /// A key derivation or digest failed inside OpenSSL (often out of memory).
        case hashingFailed
        /// A stored password hash is not a well-formed, supported PHC string.
        case malformedHash
        /// Parameters were outside the accepted range for the operation.
        case invalidParameters
        /// New hashes were requested with parameters weaker than OWASP's recommendation.
        case weakParameters
        /// The hashing pool's queue is full; the request should be retried later (HTTP 503).
        case overloaded
        /// The hashing pool has been shut down and accepts no more work.
        case shutDown
        /// Work dropped before it started because its requester went away.
        case cancelled
    }

    /// What went wrong, in a form that programs can match on.
    public let code: Code

    /// Operator-facing detail; never contains secrets.
    let detail: String?

    init(_ code: Code, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    public var description: String { "SecurityError(\(code))" }

    public var debugDescription: String {
        if let detail { "SecurityError(\(code): \(detail))" } else { description }
    }

    /// An error carrying the reason OpenSSL recorded for the failure of `operation`.
    ///
    /// Drains this thread's OpenSSL error queue, so a stale entry cannot be blamed on a later,
    /// unrelated OpenSSL user on the same thread (libpq's TLS reads that queue too).
    static func openSSL(_ code: Code, operation: String) -> SecurityError {
        var reason = "unknown reason"
        let first = ERR_get_error()
        if first != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(first, &buffer, buffer.count)
            reason = String(
                decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) },
                as: UTF8.self)
        }
        ERR_clear_error()
        return SecurityError(code, detail: "\(operation) failed: \(reason)")
    }
}
