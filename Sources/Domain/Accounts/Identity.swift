import FoundationEssentials

/// A provider that signs users in with an ID token; the raw value is the route's and the table's name.
public enum IdentityProvider: String, Sendable, CaseIterable {
    case apple
    case google

    /// How people know it ("Sign in with Apple").
    public var displayName: String {
        switch self {
        case .apple: "Sign in with Apple"
        case .google: "Sign in with Google"
        }
    }
}

/// What a checked ID token says of its user: who they are at the provider, and their address.
public struct ProviderIdentity: Sendable, Equatable {
    public var provider: IdentityProvider
    /// The provider's stable id of the user (`sub`).
    public var subject: String
    public var email: String?
    /// Whether the provider says it verified `email`.
    public var emailVerified: Bool
    /// The names the token carries (Google's `given_name`, `family_name`), for a new account.
    public var givenName: String?
    public var familyName: String?
    /// The token's SHA-256 and end (`exp`): an accepted token is refused again until then.
    public var tokenHash: [UInt8]
    public var expiresAt: Date

    public init(
        provider: IdentityProvider, subject: String, email: String?, emailVerified: Bool, givenName: String? = nil, familyName: String? = nil,
        tokenHash: [UInt8], expiresAt: Date
    ) {
        self.provider = provider
        self.subject = subject
        self.email = email
        self.emailVerified = emailVerified
        self.givenName = givenName
        self.familyName = familyName
        self.tokenHash = tokenHash
        self.expiresAt = expiresAt
    }
}

/// A provider's identity linked to an account, as `GET /users/me/identities` lists it.
public struct LinkedIdentity: Sendable, Equatable {
    public let id: UUID
    public let provider: IdentityProvider
    public let email: String?
    public let createdAt: Date
    public let lastUsedAt: Date?
}
