import AWSSignature
import Outbound

/// Where and how objects are stored: the endpoint, the bucket, how the bucket is addressed, the
/// region that signs, the credentials and the client's bounds. Read once at start-up.
public struct S3Configuration: Sendable {
    /// `https://host[:port]`, or `http://` to a loopback address only.
    public var endpoint: String
    public var bucket: String
    public var region: String
    /// `/bucket/key` on the endpoint's host (Ceph, MinIO and most stores) rather than `bucket.host/key`.
    public var pathStyle: Bool
    public var credentials: AWSCredentials
    /// PEM certificates to trust instead of the system's (a private CA).
    public var caFile: String?
    /// An address to connect to instead of resolving the request's host; TLS still verifies the host.
    public var address: String?
    public var connectTimeout: Duration
    /// The longest wait for each read or write of a request.
    public var timeout: Duration
    /// Connections kept open between requests.
    public var maximumIdleConnections: Int
    /// An idle connection older than this is closed rather than reused (stores close them too).
    public var maximumIdleTime: Duration
    /// The largest body read from the store.
    public var maximumObjectBytes: Int

    public init(
        endpoint: String, bucket: String, region: String = "us-east-1", pathStyle: Bool = false, credentials: AWSCredentials,
        caFile: String? = nil, address: String? = nil, connectTimeout: Duration = .seconds(3), timeout: Duration = .seconds(15),
        maximumIdleConnections: Int = 16, maximumIdleTime: Duration = .seconds(4), maximumObjectBytes: Int = 64 << 20
    ) {
        self.endpoint = endpoint
        self.bucket = bucket
        self.region = region
        self.pathStyle = pathStyle
        self.credentials = credentials
        self.caFile = caFile
        self.address = address
        self.connectTimeout = connectTimeout
        self.timeout = timeout
        self.maximumIdleConnections = maximumIdleConnections
        self.maximumIdleTime = maximumIdleTime
        self.maximumObjectBytes = maximumObjectBytes
    }

    /// Whether `name` is a bucket name S3 accepts: 3-63 of `a-z 0-9 . -`, starting and ending with a letter or digit.
    public static func isValidBucketName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count) else { return false }
        let allowed = { (byte: UInt8) in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }
        return allowed(bytes.first!) && allowed(bytes.last!) && bytes.allSatisfy { allowed($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
    }

    /// The endpoint checked: an `http(s)://host[:port]` URL without a path, `http` only to loopback,
    /// a valid bucket name, and no dotted bucket in a virtual host over TLS (no certificate names it).
    func target() throws(S3Error) -> HTTPGet.Target {
        guard let target = HTTPGet.Target(endpoint), target.path == "/" else {
            throw S3Error(.invalidConfiguration, "the endpoint \(endpoint) is not an http(s)://host[:port] URL without a path")
        }
        guard
            target.isSecure
                || (target.isLoopback
                    && (address.map { HTTPGet.Target($0.contains(":") ? "http://[\($0)]/" : "http://\($0)/")?.isLoopback == true } ?? true))
        else {
            throw S3Error(.invalidConfiguration, "plain http to \(target.host) is allowed only to a loopback address; use https")
        }
        guard Self.isValidBucketName(bucket) else { throw S3Error(.invalidConfiguration, "\(bucket) is not a valid bucket name") }
        guard pathStyle || !target.isSecure || !bucket.contains(".") else {
            throw S3Error(.invalidConfiguration, "a bucket whose name has dots needs path-style addressing over https")
        }
        guard !region.isEmpty, !credentials.accessKeyID.isEmpty, !credentials.secretAccessKey.isEmpty else {
            throw S3Error(.invalidConfiguration, "a region and both keys are needed")
        }
        return target
    }
}
