/// Query-string authentication: a URL that carries its own signature and expiry, so a browser or
/// a CDN can fetch an object without credentials.
extension SignatureV4 {
    /// The longest expiry S3 accepts: seven days.
    public static let maximumExpiry = 604_800

    /// The query items a presigned `request` carries besides its own, without the signature.
    public func presigningQuery(date: AMZDate, expires seconds: Int, signedHeaders: String) -> [(name: String, value: String)] {
        [
            ("X-Amz-Algorithm", Self.algorithm),
            ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope(date))"),
            ("X-Amz-Date", date.timestamp),
            ("X-Amz-Expires", String(seconds)),
            ("X-Amz-SignedHeaders", signedHeaders),
        ]
    }

    /// The request target of a presigned `request` (its headers are those the user agent will send,
    /// usually just `host`; its payload `.unsigned` for S3): the path, the query in canonical order,
    /// and `X-Amz-Signature` last.
    public func presignedTarget(_ request: Request, date: AMZDate, expires seconds: Int) -> String {
        precondition((1...Self.maximumExpiry).contains(seconds), "a presigned URL lives 1 s to 7 days")
        var signed = request
        signed.query += presigningQuery(date: date, expires: seconds, signedHeaders: Self.canonicalHeaders(request.headers).signedHeaders)
        return signed.target + "&X-Amz-Signature=" + signature(signed, date: date)
    }
}
