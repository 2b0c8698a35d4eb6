import Accounts
import HTTP
import HTTPServer
import Postgres

/// Reads what a request says about its caller: its bearer token (the only place a token is read)
/// and its origin. Used by `RouteTable`, which applies the routes' authentication.
struct Authenticator: Sendable {
    /// Proxies whose `X-Forwarded-For` decides the client address of throttles and security events.
    var trustedProxies: Set<String> = []

    /// Who sent the request: its client address seen through trusted proxies, its user agent,
    /// and the cancellation that tells when the client has gone.
    func origin(_ request: Request, _ context: RequestContext) -> RequestOrigin {
        let address = ClientAddress.resolve(
            peer: context.remoteAddress, forwardedFor: request.headers.values("X-Forwarded-For"),
            trusted: trustedProxies)
        return RequestOrigin(
            address: address, throttleAddress: ClientAddress.throttleGroup(address),
            userAgent: Authenticator.userAgent(request), cancellation: context.cancellation)
    }

    static func token(_ headers: HTTPHeaders) throws -> String {
        guard let header = headers["Authorization"] else {
            throw AccountsError(.missingToken, "This endpoint needs Authorization: Bearer <accessToken>.")
        }
        guard let token = Authenticator.bearerToken(header) else {
            throw AccountsError.invalidToken
        }
        return token
    }

    /// The token of `Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1); read byte by
    /// byte, as it runs on every authenticated request.
    static func bearerToken(_ header: String) -> String? {
        var header = header
        return header.withUTF8 { bytes -> String? in
            let scheme: StaticString = "bearer"
            let schemeLength = scheme.utf8CodeUnitCount
            guard bytes.count > schemeLength + 1, bytes[schemeLength] == UInt8(ascii: " ") else { return nil }
            for index in 0..<schemeLength where bytes[index] | 0x20 != scheme.utf8Start[index] { return nil }
            var start = schemeLength
            while start < bytes.count, bytes[start] == UInt8(ascii: " ") { start += 1 }
            let token = UnsafeBufferPointer(rebasing: bytes[start...])
            guard !token.isEmpty, !token.contains(UInt8(ascii: " ")) else { return nil }
            return String(decoding: token, as: UTF8.self)
        }
    }

    /// The client's `User-Agent`, bounded for storage.
    static func userAgent(_ request: Request) -> String? {
        request.headers["User-Agent"].map { String($0.unicodeScalars.prefix(256)) }
    }
}
