/// Why an object store request failed: a stable `code` callers branch on (and the API maps to a
/// status), the HTTP status and the store's own error code when it answered, and details for the
/// operator's log in `debugDescription`. Never a credential or a signature.
public struct S3Error: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The store could not be reached, reset the connection, or answered 5xx: worth a retry later.
        public static let unavailable = Code(rawValue: "store_unavailable")
        /// A connect, a read or a write took longer than its deadline.
        public static let timeout = Code(rawValue: "store_timeout")
        /// No such object (or no such bucket).
        public static let notFound = Code(rawValue: "not_found")
        /// The bytes the store holds or sent are not those written: a digest, an ETag or a length differs.
        public static let checksumMismatch = Code(rawValue: "checksum_mismatch")
        /// The store refused the credentials or the signature (403), or the clock is too far off.
        public static let accessDenied = Code(rawValue: "access_denied")
        /// Another 4xx: a request the store will never accept as it is.
        public static let rejected = Code(rawValue: "store_rejected")
        /// The store answered something that is not S3's protocol.
        public static let protocolError = Code(rawValue: "store_protocol_error")
        /// The endpoint, the bucket or the credentials cannot work (found before any request).
        public static let invalidConfiguration = Code(rawValue: "invalid_configuration")
    }

    public var code: Code
    /// The HTTP status of the store's answer, if it answered.
    public var status: Int?
    /// The store's `<Code>` (`NoSuchKey`, `SlowDown`, `SignatureDoesNotMatch`…), if it sent one.
    public var storeCode: String?
    public var detail: String

    public init(_ code: Code, status: Int? = nil, storeCode: String? = nil, _ detail: String) {
        self.code = code
        self.status = status
        self.storeCode = storeCode
        self.detail = detail
    }

    /// Whether a later attempt may succeed unchanged.
    public var isTransient: Bool { code == .unavailable || code == .timeout }

    public var description: String { "S3Error(\(code.rawValue))" }

    public var debugDescription: String {
        var text = "S3Error(\(code.rawValue))"
        if let status { text += " HTTP \(status)" }
        if let storeCode { text += " \(storeCode)" }
        return text + ": " + detail
    }
}
