/// An object as a `HEAD` or a `PUT` describes it.
public struct S3Object: Sendable, Equatable {
    /// The ETag without its quotes (for an object written in one request, the MD5 of its bytes in hex).
    public var etag: String
    public var size: Int
    public var contentType: String?

    public init(etag: String, size: Int, contentType: String?) {
        self.etag = etag
        self.size = size
        self.contentType = contentType
    }
}

/// What a `GET` brought: the whole object, a range of it, or "not modified".
public struct S3ObjectBody: Sendable {
    public enum Status: Sendable, Equatable {
        case whole
        case partial
        case notModified
    }

    public var status: Status
    public var bytes: [UInt8]
    public var etag: String
    public var contentType: String?
    /// The whole object's size (from `Content-Range` for a range).
    public var totalSize: Int?
    /// `Content-Range` as the store sent it, for a range.
    public var contentRange: String?
}

/// One object of a listing.
public struct S3ListedObject: Sendable, Equatable {
    public var key: String
    public var size: Int
    public var etag: String
    /// ISO 8601, as the store wrote it (`2026-12-05T10:00:00.000Z`).
    public var lastModified: String
}

/// One page of `ListObjectsV2`, and the token of the next when there is one.
public struct S3ListPage: Sendable {
    public var objects: [S3ListedObject]
    public var nextContinuationToken: String?
}

/// What the client has done since it was made, for metrics.
public struct S3Statistics: Sendable, Equatable {
    public var requests: Int
    /// Requests that ended in an error other than "not found" or "not modified".
    public var failures: Int
    public var connectionsOpened: Int
    /// The sum of the requests' durations, in seconds.
    public var seconds: Double
    /// Whether the last request to end was one of the `failures`.
    public var lastFailed = false
}
