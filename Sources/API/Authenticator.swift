import Accounts
import HTTP
import HTTPServer
import Postgres

/// Finds the session of a request from `Authorization: Bearer <token>`, the only place a token is read.
struct Authenticator: Sendable {
    let accounts: AccountService
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

    func authenticate(_ request: Request) throws -> (session: Session, user: User) {
        try accounts.authenticate(token: try token(request))
    }

    /// The signed-in user, read through `executor`, for endpoints that need nothing of the session itself.
    func user(_ request: Request, on executor: any QueryExecutor, _ completion: @escaping (Result<User, any Error>) -> Void) {
        do {
            accounts.authenticate(token: try token(request), withSession: false, on: executor) { completion($0.map(\.user)) }
        } catch {
            completion(.failure(error))
        }
    }

    /// The signed-in user, for endpoints that need nothing of the session itself.
    func authenticatedUser(_ request: Request) throws -> User {
        try accounts.authenticatedUser(token: try token(request))
    }

    /// The admission of routes that need a session: a large request's token is checked from its
    /// head, before its body is read, so that a client without a session cannot make the server
    /// buffer megabytes (the handler checks the session again once the body is in).
    var admission: Router.Admission {
        { [accounts] head, _ in _ = try accounts.authenticatedUser(token: try Authenticator.token(head.headers)) }
    }

    func token(_ request: Request) throws -> String {
        try Authenticator.token(request.headers)
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
