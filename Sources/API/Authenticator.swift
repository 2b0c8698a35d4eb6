import Accounts
import HTTP

/// Finds the session of a request from `Authorization: Bearer <token>`, the only place a token is read.
struct Authenticator: Sendable {
    let accounts: AccountService

    func authenticate(_ request: Request) throws -> (session: Session, user: User) {
        guard let header = request.headers["Authorization"] else {
            throw AccountsError(.missingToken, "This endpoint needs Authorization: Bearer <accessToken>.")
        }
        guard let token = Authenticator.bearerToken(header) else {
            throw AccountsError(.invalidToken, "The access token is missing, malformed, unknown, expired or revoked.")
        }
        return try accounts.authenticate(token: token)
    }

    /// The token of `Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1).
    static func bearerToken(_ header: String) -> String? {
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1])
    }

    /// The client's `User-Agent`, bounded for storage.
    static func userAgent(_ request: Request) -> String? {
        request.headers["User-Agent"].map { String($0.unicodeScalars.prefix(256)) }
    }
}
