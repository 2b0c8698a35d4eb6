import Cryptography

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`): the canonical request, the string to sign, the
/// signing key of a day, and the `Authorization` field or a presigned URL's query. Values only:
/// no clock, no I/O, so the AWS documentation's published examples are its tests.
///
/// The path is used as sent, encoded once, which is S3's rule; other AWS services normalise and
/// encode it twice, which this signer does not do.
public struct SignatureV4: Sendable {
    public static let algorithm = "AWS4-HMAC-SHA256"

    public var credentials: AWSCredentials
    public var region: String
    public var service: String

    public init(credentials: AWSCredentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// What the body contributes to the signature: its SHA-256, or nothing (`UNSIGNED-PAYLOAD`).
    public enum Payload: Sendable, Equatable {
        case unsigned
        /// The body's SHA-256 as 64 lower-case hexadecimal digits.
        case sha256(String)

        /// The payload of a body of `bytes`.
        public static func hashing(_ bytes: some Sequence<UInt8>) -> Payload { .sha256(SHA256.hexDigest(bytes)) }

        /// The payload of an empty body.
        public static let empty = Payload.sha256("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")

        /// The last line of the canonical request, and S3's `x-amz-content-sha256`.
        public var value: String {
            switch self {
            case .unsigned: "UNSIGNED-PAYLOAD"
            case .sha256(let hex): hex
            }
        }
    }

    /// A request as far as its signature goes.
    public struct Request: Sendable {
        public var method: String
        /// The path as it goes on the request line, already encoded (`URIEncoding.encodePath`).
        public var path: String
        /// The query's names and values, not encoded; their order does not matter.
        public var query: [(name: String, value: String)]
        /// The header fields that are signed (at least `host`), in any order and case.
        public var headers: [(name: String, value: String)]
        public var payload: Payload

        public init(
            method: String, path: String, query: [(name: String, value: String)] = [], headers: [(name: String, value: String)],
            payload: Payload
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.payload = payload
        }

        /// The request target for the request line: the path, then the query encoded in canonical order.
        public var target: String {
            query.isEmpty ? path : path + "?" + SignatureV4.canonicalQuery(query)
        }
    }

    // MARK: - The steps, each public so that a test can hold each to the documentation

    /// The query's names and values encoded, sorted by name then value, joined by `&`.
    public static func canonicalQuery(_ query: [(name: String, value: String)]) -> String {
        query.map { (URIEncoding.encode($0.name), URIEncoding.encode($0.value)) }
            .sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// The header fields lower-cased and sorted, values trimmed with inner runs of spaces made one,
    /// repeated fields joined by commas; and the list of their names.
    public static func canonicalHeaders(_ headers: [(name: String, value: String)]) -> (block: String, signedHeaders: String) {
        var merged: [String: [String]] = [:]
        for (name, value) in headers { merged[name.lowercased(), default: []].append(collapsingSpaces(value)) }
        let names = merged.keys.sorted()
        let block = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        return (block, names.joined(separator: ";"))
    }

    /// The six lines whose hash is signed.
    public static func canonicalRequest(_ request: Request) -> String {
        let (block, signed) = canonicalHeaders(request.headers)
        return [request.method, request.path, canonicalQuery(request.query), block, signed, request.payload.value].joined(separator: "\n")
    }

    /// `20130524/us-east-1/s3/aws4_request`.
    public func scope(_ date: AMZDate) -> String { "\(date.dateStamp)/\(region)/\(service)/aws4_request" }

    public func stringToSign(canonicalRequest: String, date: AMZDate) -> String {
        [Self.algorithm, date.timestamp, scope(date), SHA256.hexDigest(Array(canonicalRequest.utf8))].joined(separator: "\n")
    }

    /// The key of one day, region and service, derived from the secret by four HMACs.
    public func signingKey(_ date: AMZDate) -> [UInt8] {
        var key = HMAC.sha256(key: Array("AWS4\(credentials.secretAccessKey)".utf8), message: Array(date.dateStamp.utf8))
        for part in [region, service, "aws4_request"] { key = HMAC.sha256(key: key, message: Array(part.utf8)) }
        return key
    }

    /// The 64 hexadecimal digits of the signature of `request` at `date`.
    public func signature(_ request: Request, date: AMZDate) -> String {
        let text = stringToSign(canonicalRequest: Self.canonicalRequest(request), date: date)
        return Hex.encode(HMAC.sha256(key: signingKey(date), message: Array(text.utf8)))
    }

    /// The `Authorization` field's value for `request`, whose headers already hold `x-amz-date`.
    public func authorization(_ request: Request, date: AMZDate) -> String {
        let signed = Self.canonicalHeaders(request.headers).signedHeaders
        return "\(Self.algorithm) Credential=\(credentials.accessKeyID)/\(scope(date)), SignedHeaders=\(signed), "
            + "Signature=\(signature(request, date: date))"
    }

    /// The header fields to send: `request`'s, then `x-amz-date`, for S3 `x-amz-content-sha256`,
    /// and `authorization`, all but the last signed.
    public func sign(_ request: Request, date: AMZDate) -> [(name: String, value: String)] {
        var request = request
        request.headers.append(("x-amz-date", date.timestamp))
        if service == "s3" { request.headers.append(("x-amz-content-sha256", request.payload.value)) }
        return request.headers + [("authorization", authorization(request, date: date))]
    }

    private static func collapsingSpaces(_ value: String) -> String {
        var result = ""
        var pendingSpace = false
        for character in value {
            if character == " " || character == "\t" {
                pendingSpace = !result.isEmpty
            } else {
                if pendingSpace { result.append(" ") }
                pendingSpace = false
                result.append(character)
            }
        }
        return result
    }
}
