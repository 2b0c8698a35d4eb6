import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The client of an Exosphere server: accounts and their recovery, the signed-in user's profile,
/// and images.
///
/// Make one per server and keep it for the life of the app. It keeps the session in a
/// `SessionStore`, so `currentUser` is there again after a restart, and it is safe to use from
/// any thread or task.
///
/// ```swift
/// let exosphere = Exosphere(baseURL: URL(string: "https://api.example.com")!)
/// if let user = exosphere.currentUser { showProfile(user) } else { showSignIn() }
/// ```
///
/// Every method throws `ExosphereError`. Answers `503` and `429` are retried after `Retry-After`
/// (see `RetryPolicy`); a `401` on a signed-in request ends the session (`authStateChanges()`).
public final class Exosphere: Sendable {
    /// The server's base URL, e.g. `https://api.example.com` (a path prefix is kept).
    public let baseURL: URL
    /// Retries, timeouts, the user agent and the image cache, as given at `init`.
    public let configuration: Configuration
    /// Why the stored session could not be restored at start, when it could not (`currentUser`
    /// is then nil); nil when there was none or it was restored.
    public let restoreError: ExosphereError?

    let store: any SessionStore
    let transport: Transport
    let imageCache: ImageCache?
    private let state: Locked<State>

    /// The signed-in session as kept in memory and in the store.
    struct SignedIn: Sendable {
        var accessToken: String
        var expiresAt: Date?
        /// The server's last copy of the user (no local edits), with its ETag when known.
        var user: User
    }

    private struct State {
        var session: SignedIn?
        var subscribers: [UUID: AsyncStream<AuthStateChange>.Continuation] = [:]
    }

    /// A client of the server at `baseURL`.
    ///
    /// - Parameters:
    ///   - sessionStore: where the session is kept; nil for the platform's default: the Keychain
    ///     on Apple platforms (service: the bundle identifier, account: `baseURL`), a mode-0600
    ///     file under `~/.local/share/exosphere` elsewhere.
    ///   - configuration: retries, timeouts, the user agent and the image cache.
    public init(baseURL: URL, sessionStore: (any SessionStore)? = nil, configuration: Configuration = Configuration()) {
        self.baseURL = baseURL
        self.configuration = configuration
        let store = sessionStore ?? Exosphere.defaultSessionStore(for: baseURL)
        self.store = store
        transport = Transport(baseURL: baseURL, configuration: configuration)
        imageCache =
            configuration.imageCacheEnabled
            ? ImageCache(
                directory: configuration.imageCacheDirectory ?? ImageCache.defaultDirectory(for: baseURL),
                maxBytes: configuration.imageCacheMaxBytes)
            : nil
        var restored: SignedIn?
        var restoreError: ExosphereError?
        do {
            restored = try store.load().map(Exosphere.decodeSession)
        } catch let error as ExosphereError {
            restoreError = error
        } catch {
            restoreError = ExosphereError(
                code: .sessionStoreFailed, detail: "The session store could not be read: \(error)",
                underlyingError: error)
        }
        self.restoreError = restoreError
        state = Locked(State(session: restored))
    }

    /// Ends the streams of `authStateChanges()`, whose loops would otherwise wait forever.
    deinit {
        state.withLock { state in
            for subscriber in state.subscribers.values { subscriber.finish() }
        }
    }

    /// The platform's default session store for a server (see `init`).
    public static func defaultSessionStore(for baseURL: URL) -> any SessionStore {
        #if canImport(Darwin) && canImport(Security)
        return KeychainSessionStore(service: Bundle.main.bundleIdentifier ?? "Exosphere", account: baseURL.absoluteString)
        #else
        return FileSessionStore(url: FileSessionStore.defaultURL(name: Exosphere.fileName(for: baseURL)))
        #endif
    }

    // MARK: - State

    /// The signed-in user as the server last returned it, or nil when signed out. Restored from
    /// the session store at start; `fetchUser()` refreshes it, `save(_:)` updates it.
    public var currentUser: User? { state.withLock { $0.session?.user } }

    /// Whether a session is stored. The server may still refuse it (expired, revoked): the first
    /// request then fails with `401` and the client signs out.
    public var isSignedIn: Bool { state.withLock { $0.session != nil } }

    /// A new stream of the client's sign-in state: first `.initial` with the current user, then
    /// every change (sign-in, sign-out, an expired session, a deleted account). It ends when the
    /// task iterating it is cancelled.
    public func authStateChanges() -> AsyncStream<AuthStateChange> {
        let id = UUID()
        return AsyncStream { continuation in
            state.withLock { state in
                continuation.yield(.initial(state.session?.user))
                state.subscribers[id] = continuation
            }
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
            }
        }
    }

    /// How many `authStateChanges()` sequences are listening (for tests: a watcher is subscribed).
    var authStateSubscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// The token of the current session, if any.
    var currentToken: String? { state.withLock { $0.session?.accessToken } }

    /// The token of the current session, for a request that needs one.
    func accessToken() throws -> String {
        guard let token = currentToken else { throw ExosphereError.notSignedIn }
        return token
    }

    /// Makes `session` the current one and stores it; announces `change` when given.
    ///
    /// - Throws: `session_store_failed` when the store refuses it; the session is used in memory
    ///   anyway, until the app quits.
    func begin(_ session: SignedIn, announcing change: AuthStateChange?) throws {
        let previousUserID = state.withLock { $0.session?.user.id }
        if let previousUserID, previousUserID != session.user.id {
            imageCache?.removeAll()  // another user's images
        }
        let blob = Exosphere.encodeSession(session)
        let failure: (any Error)? = state.withLock { state in
            state.session = session
            if let change { for subscriber in state.subscribers.values { subscriber.yield(change) } }
            do {
                try store.save(blob)
                return nil
            } catch {
                return error
            }
        }
        if let failure {
            throw ExosphereError(
                code: .sessionStoreFailed, detail: "Signed in, but the session could not be stored: \(failure)",
                underlyingError: failure)
        }
    }

    /// Replaces the stored copy of the user, if the session that read it is still the current one.
    func remember(_ user: User, readWith token: String) {
        state.withLock { state in
            guard state.session?.accessToken == token, state.session?.user.id == user.id else { return }
            state.session?.user = user
            // The stored user is a cache of the server's copy: if it cannot be written, the next
            // start shows the older copy until `fetchUser()`, which is no reason to fail a save.
            do { try store.save(Exosphere.encodeSession(state.session!)) } catch {}
        }
    }

    /// Forgets the session (memory, store, image cache) and announces `change`; with `token`, only
    /// if that is still the current session's (a newer sign-in is left alone).
    func end(announcing change: AuthStateChange, ifToken token: String? = nil) {
        let ended = state.withLock { state -> Bool in
            guard let session = state.session, token == nil || session.accessToken == token else { return false }
            state.session = nil
            // The token is dead on the server (or the user asked to forget it): a store that
            // cannot delete it leaves a token the next start will find refused.
            do { try store.clear() } catch {}
            for subscriber in state.subscribers.values { subscriber.yield(change) }
            return true
        }
        if ended { imageCache?.removeAll() }
    }

    // MARK: - Requests

    /// Sends `request`, retrying as `RetryPolicy` allows; a status of 400 or more throws its
    /// problem. A `401` to a request sent with `token` ends that session.
    func send(_ request: APIRequest, token: String? = nil) async throws -> APIResponse {
        let policy = configuration.retryPolicy
        var attempt = 0
        while true {
            let response: APIResponse
            do {
                response = try await transport.send(request, token: token)
            } catch let error as ExosphereError {
                guard attempt < policy.maxRetries, error.code == .networkError, request.mayRetry(after: error) else { throw error }
                try await Exosphere.sleep(seconds: policy.networkRetryDelay * Double(1 << min(attempt, 10)))
                attempt += 1
                continue
            }
            if response.status < 400 { return response }
            let error = ExosphereError(status: response.status, body: response.body, retryAfter: response.retryAfter)
            if response.status == 401, let token {
                end(announcing: .sessionExpired, ifToken: token)
                throw error
            }
            if response.status == 503 || response.status == 429, attempt < policy.maxRetries, request.mayRetry(after: error) {
                let delay = response.retryAfter ?? policy.defaultRetryAfter
                if delay <= policy.maxRetryAfter {
                    try await Exosphere.sleep(seconds: delay)
                    attempt += 1
                    continue
                }
            }
            throw error
        }
    }

    /// Sends a request that needs the session; returns the response and the token it used.
    func sendSignedIn(_ request: APIRequest) async throws -> (APIResponse, token: String) {
        let token = try accessToken()
        return (try await send(request, token: token), token)
    }

    private static func sleep(seconds: TimeInterval) async throws {
        try await Task.sleep(nanoseconds: UInt64(max(0, seconds) * 1_000_000_000))
    }

    // MARK: - The stored form

    /// `{"version": 1, "accessToken", "expiresAt", "user", "etag"}`.
    static func encodeSession(_ session: SignedIn) -> Data {
        var members: [String: JSONValue] = [
            "version": .integer(1), "accessToken": .string(session.accessToken), "user": session.user.serverJSON,
        ]
        if let expiresAt = session.expiresAt { members["expiresAt"] = .string(Timestamp.format(expiresAt)) }
        if let etag = session.user.etag { members["etag"] = .string(etag) }
        // Only strings, integers and finite doubles read from the server: nothing can fail.
        return (try? JSONValue.object(members).serialized()) ?? Data()
    }

    static func decodeSession(_ blob: Data) throws -> SignedIn {
        do {
            let json = try JSONValue.parse(blob)
            guard json["version"]?.intValue == 1, let token = json["accessToken"]?.stringValue, let user = json["user"] else {
                throw ExosphereError(code: .sessionStoreFailed, detail: "The stored session is not in a known format.")
            }
            return SignedIn(
                accessToken: token, expiresAt: json["expiresAt"]?.stringValue.flatMap(Timestamp.parse),
                user: try User(json: user, etag: json["etag"]?.stringValue))
        } catch let error as ExosphereError {
            throw ExosphereError(code: .sessionStoreFailed, detail: "The stored session cannot be read: \(error.detail)")
        } catch {
            throw ExosphereError(code: .sessionStoreFailed, detail: "The stored session cannot be read: \(error)")
        }
    }

    /// A file name for a server: its host and port, in safe characters.
    static func fileName(for baseURL: URL) -> String {
        let text = (baseURL.host ?? "server") + (baseURL.port.map { "-\($0)" } ?? "") + baseURL.path
        let safe = text.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "." ? Character($0) : "_" }
        return String(safe)
    }
}
