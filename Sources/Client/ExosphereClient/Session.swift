import Foundation

/// One of the signed-in user's sessions (a signed-in device or app), from `Exosphere.sessions()`.
public struct Session: Identifiable, Hashable, Sendable {
    /// Opaque; pass the session to `Exosphere.revokeSession(_:)`.
    public let id: String
    /// When it started (sign-in, registration, password change or reset).
    public let createdAt: Date
    /// Its last authenticated request; the server writes it at most once a minute.
    public let lastSeenAt: Date
    /// When it ends if unused.
    public let expiresAt: Date
    /// When its holder last proved a credential (its sign-in, or `Exosphere.reauthenticate(password:)`).
    public let authenticatedAt: Date
    /// The `User-Agent` of the request that started it (`Exosphere.Configuration.userAgent`).
    public let userAgent: String?
    /// Whether this is this client's own session.
    public let isCurrent: Bool

    init(json: JSONValue) throws {
        guard let id = json["id"]?.stringValue,
            let createdAt = json["createdAt"]?.stringValue.flatMap(Timestamp.parse),
            let lastSeenAt = json["lastSeenAt"]?.stringValue.flatMap(Timestamp.parse),
            let expiresAt = json["expiresAt"]?.stringValue.flatMap(Timestamp.parse),
            let authenticatedAt = json["authenticatedAt"]?.stringValue.flatMap(Timestamp.parse)
        else {
            throw ExosphereError.invalidResponse("a session without id or timestamps")
        }
        self.id = id
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.expiresAt = expiresAt
        self.authenticatedAt = authenticatedAt
        self.userAgent = json["userAgent"]?.stringValue
        self.isCurrent = json["current"]?.boolValue ?? false
    }
}

/// Which sessions `Exosphere.signOut(scope:)` ends.
public enum SignOutScope: String, Sendable, CaseIterable {
    /// This client's session only.
    case current
    /// Every other session of the user; this client stays signed in.
    case others
    /// Every session of the user, this client's included.
    case all
}
