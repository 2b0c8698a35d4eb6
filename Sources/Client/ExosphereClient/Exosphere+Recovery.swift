import Foundation

/// Account recovery: password reset and email verification through mailed links, and the
/// user's security activity.
///
/// The server mails links such as `https://accounts.example.com/reset-password#token=…`. Opened
/// in a browser they finish the flow on the server's own pages; an app that opens them itself
/// (a universal link) reads the token with `Exosphere.recoveryLink(from:)` and finishes the flow
/// with `confirmPasswordReset(token:newPassword:)` or `verifyEmail(token:)`.
extension Exosphere {
    /// Asks the server to mail a password reset link to `email`. No session is needed.
    ///
    /// The server answers the same whether or not the address has an account, so success says
    /// nothing about the address: tell the user to look for the mail. The link works once,
    /// within an hour; a newer request voids the older links.
    ///
    /// - Throws: `ExosphereError`: `422 invalid_email`, `429 too_many_attempts` (5 an hour per
    ///   address) with `retryAfter`.
    public func requestPasswordReset(email: String) async throws {
        let body = JSONValue.object(["email": .string(email)])
        _ = try await send(APIRequest("POST", "/users/password-reset", body: .json(body)))
    }

    /// Sets a new password with the token of a mailed reset link, and signs this client in
    /// with it, as `signIn` does: the session is stored and `authStateChanges()` yields
    /// `.signedIn`.
    ///
    /// The server ends every other session of the user (devices signed in with the old password
    /// are signed out at their next request) and marks the address verified, since the link
    /// came through it.
    ///
    /// - Parameter token: the `token` of the link's fragment (`Exosphere.recoveryLink(from:)`).
    /// - Returns: the user, also `currentUser` from now on.
    /// - Throws: `ExosphereError`: `422 weak_password` (checked first, so the link still works),
    ///   `422 invalid_reset_token` (unknown, used, expired, or superseded by a newer request or a
    ///   password change: ask for a new link).
    @discardableResult
    public func confirmPasswordReset(token: String, newPassword: String) async throws -> User {
        let body = JSONValue.object(["token": .string(token), "newPassword": .string(newPassword)])
        let response = try await send(APIRequest("POST", "/users/password-reset/confirm", body: .json(body)))
        return try begin(from: response)
    }

    /// Verifies the user's email address with the token of a mailed verification link. No
    /// session is needed (the link may be opened on a device that is not signed in).
    ///
    /// - Parameter token: the `token` of the link's fragment (`Exosphere.recoveryLink(from:)`).
    /// - Returns: the user, with `emailVerified` true. When this client is signed in as that
    ///   user, it is also `currentUser` from now on.
    /// - Throws: `ExosphereError` `422 invalid_verification_token`: unknown, used, expired, or
    ///   for an address the account no longer has.
    @discardableResult
    public func verifyEmail(token: String) async throws -> User {
        let body = JSONValue.object(["token": .string(token)])
        let response = try await send(APIRequest("POST", "/users/verify-email", body: .json(body)))
        let user = try User(json: try response.json(), etag: response.header("ETag"))
        // Sent without the session, so the answer may be another account's: `remember` keeps
        // it only if it is the signed-in user's.
        if let token = currentToken { remember(user, readWith: token) }
        return user
    }

    /// Applies a pending change of address with the token of the link mailed to the new address
    /// (`…/verify-email#token=…`, the same page and route as a verification; `recoveryLink(from:)`
    /// reads it as `.emailVerification`). No session is needed.
    ///
    /// - Returns: the user with the new `email`, `emailVerified` true and no `pendingEmail`. When
    ///   this client is signed in as that user, it is also `currentUser` from now on.
    /// - Throws: `ExosphereError`: `409 email_taken` (another account took the address meanwhile;
    ///   the link stays usable), `422 invalid_verification_token` (unknown, used, expired, or
    ///   replaced by a newer change).
    @discardableResult
    public func confirmEmailChange(token: String) async throws -> User {
        try await verifyEmail(token: token)
    }

    /// Puts back the address a change of address moved away from, with the token of the undo
    /// link mailed there (`…/undo-email-change#token=…`, 7 days). The server ends every session
    /// of the user, this client's too: it is signed out afterwards. No session is needed.
    ///
    /// - Returns: the address that is back.
    /// - Throws: `ExosphereError`: `422 invalid_undo_token` (unknown, used or expired), `409
    ///   email_taken` (another account has that address now).
    @discardableResult
    public func undoEmailChange(token: String) async throws -> String {
        let body = JSONValue.object(["token": .string(token)])
        let response = try await send(APIRequest("POST", "/users/email-change/undo", body: .json(body)))
        guard let email = try response.json()["email"]?.stringValue else {
            throw ExosphereError.invalidResponse("an undo answer without email")
        }
        return email
    }

    /// Mails a new verification link to the signed-in user's address, voiding the older ones.
    ///
    /// - Throws: `ExosphereError`: `409 already_verified` (`currentUser` is refreshed first, so
    ///   its `emailVerified` is true afterwards), `429 too_many_attempts` (5 an hour).
    public func resendVerificationEmail() async throws {
        do {
            _ = try await sendSignedIn(APIRequest("POST", "/users/me/verify-email"))
        } catch let error as ExosphereError where error.code == .alreadyVerified {
            // Verified meanwhile, e.g. from a link opened in a browser: the held copy still says
            // otherwise. Refreshing it is a courtesy; its failure must not hide the answer.
            _ = try? await fetchUser()
            throw error
        }
    }

    /// The signed-in user's security events (sign-ins, failed sign-ins, password changes and
    /// resets, …), newest first, as an asynchronous sequence that fetches pages of `pageSize`
    /// (1–100) as it goes. The server keeps events for 90 days.
    ///
    /// ```swift
    /// for try await event in exosphere.activity() where event.type == .signInFailed { … }
    /// ```
    public func activity(pageSize: Int = 50) -> ActivitySequence {
        ActivitySequence(client: self, pageSize: pageSize)
    }

    /// One page of the signed-in user's security events, newest first: the first page without
    /// `cursor`, then the page after each `next`, until `next` is nil.
    ///
    /// - Throws: `ExosphereError` `422 invalid_limit` for a `limit` outside 1–100,
    ///   `422 invalid_cursor` for a cursor the server did not issue.
    public func activityPage(after cursor: String? = nil, limit: Int = 50) async throws -> ActivityPage {
        var query: [(name: String, value: String)] = [("limit", String(limit))]
        if let cursor { query.append(("after", cursor)) }
        let (response, _) = try await sendSignedIn(APIRequest("GET", "/users/me/activity", query: query))
        let json = try response.json()
        guard let entries = json["events"]?.arrayValue else { throw ExosphereError.invalidResponse("an activity list without events") }
        return ActivityPage(events: try entries.map(ActivityEvent.init(json:)), next: json["next"]?.stringValue)
    }

    /// The token of a mailed link (`…/reset-password#token=…`, `…/verify-email#token=…` or
    /// `…/undo-email-change#token=…`) that
    /// the app opened itself, e.g. in `onOpenURL` or `application(_:continue:restorationHandler:)`;
    /// nil for any other URL.
    ///
    /// The last path component says what the link is for, so a deployment whose public URL has a
    /// path prefix works too, and so does a custom scheme that names it as the host
    /// (`myapp://reset-password#token=…`). The token is in the fragment, where the server puts it
    /// so that it never reaches a log or a `Referer`.
    public static func recoveryLink(from url: URL) -> RecoveryLink? {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
            let fragment = components.percentEncodedFragment
        else { return nil }
        let path = components.percentEncodedPath
        let name = path.isEmpty || path == "/" ? (components.host ?? "") : url.lastPathComponent
        let kind: RecoveryLink.Kind
        switch name {
        case "reset-password": kind = .passwordReset
        case "verify-email": kind = .emailVerification
        case "undo-email-change": kind = .emailChangeUndo
        default: return nil
        }
        // The fragment is read as the server's pages read it: `name=value` pairs joined by `&`.
        for pair in fragment.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0].removingPercentEncoding == "token" else { continue }
            let token = (parts[1].removingPercentEncoding ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
            return token.isEmpty ? nil : RecoveryLink(kind: kind, token: token)
        }
        return nil
    }
}

/// A mailed password reset or verification link, as `Exosphere.recoveryLink(from:)` read it.
public struct RecoveryLink: Hashable, Sendable, CustomStringConvertible {
    /// What a mailed link is for.
    public enum Kind: Hashable, Sendable {
        /// `…/reset-password#token=…`: finish with `Exosphere.confirmPasswordReset(token:newPassword:)`.
        case passwordReset
        /// `…/verify-email#token=…`: finish with `Exosphere.verifyEmail(token:)` (a verification,
        /// or the confirmation of a change of address: the server tells them apart).
        case emailVerification
        /// `…/undo-email-change#token=…`, mailed to the old address after a change of address:
        /// finish with `Exosphere.undoEmailChange(token:)` once the person confirms.
        case emailChangeUndo
    }

    /// What the link is for.
    public let kind: Kind
    /// The token of the link's fragment: opaque, and a secret until it is used.
    public let token: String

    /// A link of `kind` carrying `token`.
    public init(kind: Kind, token: String) {
        self.kind = kind
        self.token = token
    }

    /// The kind only: the token is a credential, and descriptions end up in logs.
    public var description: String { "RecoveryLink(\(kind))" }
}
