import Foundation

/// Registration, sign-in and sign-out, sessions, the password and the account.
extension Exosphere {
    /// Creates an account and signs in to it.
    ///
    /// - Parameter data: initial custom fields (e.g. `["isMarried": false]`).
    /// - Returns: the new user, also `currentUser` from now on.
    /// - Throws: `ExosphereError`: `409 email_taken`, `422 invalid_email`, `422 weak_password`
    ///   (fewer than 8 characters), `422 invalid_type` (a field of another type), …
    @discardableResult
    public func register(
        email: String, password: String, firstname: String? = nil, lastname: String? = nil,
        data: [String: FieldValue] = [:]
    ) async throws -> User {
        var body: [String: JSONValue] = ["email": .string(email), "password": .string(password)]
        if let firstname { body["firstname"] = .string(firstname) }
        if let lastname { body["lastname"] = .string(lastname) }
        if !data.isEmpty { body["data"] = .object(data.mapValues(\.json)) }
        let response = try await send(APIRequest("POST", "/users", body: .json(.object(body))))
        return try begin(from: response)
    }

    /// Signs in with email and password, next to any other session of the user.
    ///
    /// - Returns: the user, also `currentUser` from now on.
    /// - Throws: `ExosphereError`: `401 invalid_credentials` (the same for an unknown email and
    ///   a wrong password), `429 too_many_attempts` with `retryAfter`.
    @discardableResult
    public func signIn(email: String, password: String) async throws -> User {
        let body = JSONValue.object(["email": .string(email), "password": .string(password)])
        let response = try await send(APIRequest("POST", "/users/signin", body: .json(body)))
        return try begin(from: response)
    }

    /// Starts as a guest: an account with no address and no password, signed in on this client
    /// (`User.isGuest`). The guest keeps a profile, fields and images like anyone; to keep them
    /// for good, give it a way back in: save an address and open the mailed link, then
    /// `setPassword(_:)`; or add a passkey, or link Apple or Google. A guest left idle for the
    /// server's `--guest-ttl-days` (30 by default) is deleted with everything it holds.
    ///
    /// - Throws: `ExosphereError` `429 too_many_attempts` (guests made from one address).
    @discardableResult
    public func signInAsGuest(firstname: String? = nil, lastname: String? = nil, data: [String: FieldValue] = [:]) async throws -> User {
        var body: [String: JSONValue] = [:]
        if let firstname { body["firstname"] = .string(firstname) }
        if let lastname { body["lastname"] = .string(lastname) }
        if !data.isEmpty { body["data"] = .object(data.mapValues(\.json)) }
        let response = try await send(APIRequest("POST", "/users/guest", body: .json(.object(body))))
        return try begin(from: response)
    }

    /// Asks the server to mail an 8-digit sign-in code to `address` (10 minutes; a newer code
    /// voids the older). The answer is the same whether or not the address has an account: tell
    /// the user to look for the mail, then call `signIn(email:code:)`.
    ///
    /// - Throws: `ExosphereError`: `422 invalid_email`, `429 too_many_attempts` with `retryAfter`.
    public func sendSignInCode(to address: String) async throws {
        let body = JSONValue.object(["email": .string(address)])
        _ = try await send(APIRequest("POST", "/users/signin/email-code", body: .json(body)))
    }

    /// Signs in with the code `sendSignInCode(to:)` mailed; the server marks the address verified.
    ///
    /// - Returns: the user, also `currentUser` from now on.
    /// - Throws: `ExosphereError`: `401 invalid_code` (wrong, used, expired, replaced, or five
    ///   wrong tries: ask for a new one), `401 mfa_required` (finish with `finishSignIn`),
    ///   `429 too_many_attempts`.
    @discardableResult
    public func signIn(email: String, code: String) async throws -> User {
        let body = JSONValue.object(["email": .string(email), "code": .string(code)])
        let response = try await send(APIRequest("POST", "/users/signin/email-code/verify", body: .json(body)))
        return try begin(from: response)
    }

    /// Ends the sessions `scope` names. With `.current` and `.all` this client forgets its
    /// session, even when the server cannot be told (then the error is thrown afterwards, and
    /// the token stays valid on the server until it expires).
    public func signOut(scope: SignOutScope = .current) async throws {
        guard let token = currentToken else { return }
        let request = APIRequest("POST", "/users/signout", body: .json(.object(["scope": .string(scope.rawValue)])))
        do {
            _ = try await send(request, token: token)
        } catch let error as ExosphereError where error.isSessionExpired {
            return  // already ended on the server; `send` has signed this client out
        } catch {
            if scope != .others { end(announcing: .signedOut, ifToken: token) }
            throw error
        }
        if scope != .others { end(announcing: .signedOut, ifToken: token) }
    }

    /// The signed-in user's sessions (devices), oldest first; `isCurrent` marks this client's.
    public func sessions() async throws -> [Session] {
        let (response, _) = try await sendSignedIn(APIRequest("GET", "/users/me/sessions"))
        guard let entries = try response.json()["sessions"]?.arrayValue else {
            throw ExosphereError.invalidResponse("a session list without sessions")
        }
        return try entries.map(Session.init(json:))
    }

    /// Ends one of the user's sessions: signs another device out, or this client when it is
    /// the current session.
    ///
    /// - Throws: `ExosphereError` `404 not_found` when the user has no such session.
    public func revokeSession(_ session: Session) async throws {
        let (_, token) = try await sendSignedIn(APIRequest("DELETE", "/users/me/sessions/" + APIRequest.segment(session.id)))
        if session.isCurrent { end(announcing: .signedOut, ifToken: token) }
    }

    /// Changes the password. The server replaces this client's session with a new one (kept
    /// here, so the client stays signed in) and ends every other session of the user.
    ///
    /// - Parameter confirm: the new password typed again, checked by the server when given.
    /// - Returns: how many other sessions were ended.
    /// - Throws: `ExosphereError`: `403 invalid_password` (the old one is wrong),
    ///   `422 weak_password`, `422 password_unchanged`, `422 password_mismatch`, `429` after five
    ///   wrong old passwords in 15 minutes.
    @discardableResult
    public func changePassword(old: String, new: String, confirm: String? = nil) async throws -> Int {
        var body: [String: JSONValue] = ["oldPassword": .string(old), "newPassword": .string(new)]
        if let confirm { body["confirmPassword"] = .string(confirm) }
        let (response, _) = try await sendSignedIn(APIRequest("POST", "/users/me/password", body: .json(.object(body))))
        let json = try response.json()
        try begin(from: json, announcing: nil)
        return json["revokedSessions"]?.intValue ?? 0
    }

    /// The first password of an account without one (a guest with a confirmed address, an
    /// account made by Apple, Google, a passkey or a code). Like `changePassword`, the server
    /// replaces this client's session and ends every other one.
    ///
    /// - Throws: `ExosphereError`: `409 no_address` (confirm an address first: a password signs
    ///   in with it), `403 reauthentication_required` (a full account proves itself first),
    ///   `422 invalid_value` on `oldPassword` (the account has a password: `changePassword`).
    @discardableResult
    public func setPassword(_ new: String) async throws -> Int {
        let (response, _) = try await sendSignedIn(APIRequest("POST", "/users/me/password", body: .json(.object(["newPassword": .string(new)]))))
        let json = try response.json()
        try begin(from: json, announcing: nil)
        return json["revokedSessions"]?.intValue ?? 0
    }

    /// Mails the account's address a code for `reauthenticate(code:)`: how an account without a
    /// password proves itself.
    ///
    /// - Throws: `ExosphereError` `409 no_address` (a guest), `429` (5 an hour).
    public func sendReauthenticationCode() async throws {
        _ = try await sendSignedIn(APIRequest("POST", "/users/me/reauthenticate/code"))
    }

    /// `reauthenticate(password:)` with the code `sendReauthenticationCode()` mailed.
    ///
    /// - Throws: `ExosphereError` `422 invalid_code`.
    @discardableResult
    public func reauthenticate(code: String) async throws -> Date {
        try await reauthenticate(["code": .string(code)])
    }

    /// Proves the password again for this client's session: adding or removing a passkey or an
    /// identity needs it within the server's `--recent-authentication-seconds` (5 minutes by
    /// default), and answers `403 reauthentication_required` otherwise.
    ///
    /// - Returns: the session's new `authenticatedAt`.
    /// - Throws: `ExosphereError` `403 invalid_password`, `429` after five wrong passwords in 15
    ///   minutes (shared with `changePassword`).
    @discardableResult
    public func reauthenticate(password: String) async throws -> Date {
        try await reauthenticate(["password": .string(password)])
    }

    /// `reauthenticate(password:)` while the second factor is on: the password and the
    /// authenticator's code (6 digits) or a recovery code.
    ///
    /// - Throws: `ExosphereError` `422 invalid_code`, `403 invalid_password`.
    @discardableResult
    public func reauthenticate(password: String, code: String) async throws -> Date {
        let isTOTP = code.count == 6 && code.allSatisfy(\.isNumber)
        return try await reauthenticate(["password": .string(password), isTOTP ? "totp" : "recoveryCode": .string(code)])
    }

    /// `reauthenticate(password:)` for an account that signs in with Apple or Google: an ID token
    /// of an identity linked to it, with the nonce from `identityTokenNonce()` as at sign-in.
    ///
    /// - Throws: `ExosphereError` `422 invalid_id_token` (refused, or of no identity of this account).
    @discardableResult
    public func reauthenticate(with provider: IdentityProvider, idToken: String, nonce: String?) async throws -> Date {
        var body: [String: JSONValue] = ["provider": .string(provider.rawValue), "idToken": .string(idToken)]
        if let nonce { body["nonce"] = .string(nonce) }
        return try await reauthenticate(body)
    }

    /// `reauthenticate(password:)` with a passkey of the account: the platform's assertion for
    /// `passkeySignInOptions()`.
    ///
    /// - Throws: `ExosphereError` `422 invalid_credentials` (refused, or a passkey of another account).
    @discardableResult
    public func reauthenticate(withPasskey assertion: PasskeyAssertion) async throws -> Date {
        try await reauthenticate(["passkey": assertion.json])
    }

    private func reauthenticate(_ body: [String: JSONValue]) async throws -> Date {
        let request = APIRequest("POST", "/users/me/reauthenticate", body: .json(.object(body)))
        let (response, _) = try await sendSignedIn(request)
        guard let at = try response.json()["authenticatedAt"]?.stringValue.flatMap(Timestamp.parse) else {
            throw ExosphereError.invalidResponse("a reauthentication without authenticatedAt")
        }
        return at
    }

    /// Deletes the account, with its sessions and images, and signs out. An account without a
    /// password (a guest, an account made by a provider or a code) sends none, and needs a
    /// recent reauthentication instead (a guest: nothing).
    ///
    /// - Throws: `ExosphereError` `403 invalid_password`, `403 reauthentication_required`, `429`
    ///   after five wrong passwords.
    public func deleteAccount(password: String?) async throws {
        // Not repeated when its answer is lost: a second attempt would find the token gone.
        let body: [String: JSONValue] = password.map { ["password": .string($0)] } ?? [:]
        let request = APIRequest("DELETE", "/users/me", body: .json(.object(body)), isIdempotent: false)
        let (_, token) = try await sendSignedIn(request)
        end(announcing: .accountDeleted, ifToken: token)
    }

    // MARK: - Sessions from responses

    /// Takes the session of a registration, sign-in or password reset response and announces it.
    func begin(from response: APIResponse) throws -> User {
        try begin(from: try response.json(), announcing: AuthStateChange.signedIn)
    }

    /// `{"accessToken", "expiresAt", "user"}` becomes the current session.
    @discardableResult
    private func begin(from json: JSONValue, announcing change: ((User) -> AuthStateChange)?) throws -> User {
        guard let token = json["accessToken"]?.stringValue, let userJSON = json["user"] else {
            throw ExosphereError.invalidResponse("a session without accessToken or user")
        }
        let user = try User(json: userJSON, etag: nil)
        let session = SignedIn(accessToken: token, expiresAt: json["expiresAt"]?.stringValue.flatMap(Timestamp.parse), user: user)
        try begin(session, announcing: change?(user))
        return user
    }
}
