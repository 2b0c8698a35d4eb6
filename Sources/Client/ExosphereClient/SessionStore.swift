import Foundation

/// Where the client keeps the signed-in session (the bearer token and the user's last copy) so
/// that `Exosphere.currentUser` survives an app restart.
///
/// The client hands the store one opaque blob; the store keeps it safe, since it holds a bearer
/// token. `KeychainSessionStore` (Apple platforms) and `FileSessionStore` (a file with mode 0600)
/// are provided; `InMemorySessionStore` forgets at exit. Implement it to keep the session
/// elsewhere. Calls may come from any thread, one at a time.
public protocol SessionStore: Sendable {
    /// The blob last saved, or nil when there is none.
    func load() throws -> Data?
    /// Replaces the blob.
    func save(_ session: Data) throws
    /// Forgets the blob (at sign-out and when the server ends the session).
    func clear() throws
}

/// A session store that keeps the session in memory only: signed out at every start.
public final class InMemorySessionStore: SessionStore {
    private let stored = Locked<Data?>(nil)

    /// An empty store.
    public init() {}

    /// The blob last saved.
    public func load() throws -> Data? { stored.withLock { $0 } }
    /// Keeps the blob until `clear()` or the end of the process.
    public func save(_ session: Data) throws { stored.withLock { $0 = session } }
    /// Forgets the blob.
    public func clear() throws { stored.withLock { $0 = nil } }
}
