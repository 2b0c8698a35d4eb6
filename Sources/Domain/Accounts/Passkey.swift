import FoundationEssentials

/// A user's passkey, as `GET /users/me/passkeys` lists it.
public struct Passkey: Sendable, Equatable {
    public let id: UUID
    public let name: String
    /// The credential id, for the browser's `excludeCredentials`.
    public let credentialID: [UInt8]
    public let transports: [String]
    /// Whether the passkey is synced (backed up) by its provider: shown so a user knows which ones
    /// live on one device only.
    public let backedUp: Bool
    public let createdAt: Date
    public let lastUsedAt: Date?
}

/// A passkey's registration as the browser returned it (`RegistrationResponseJSON`), decoded.
public struct PasskeyRegistration: Sendable {
    public var credentialID: [UInt8]
    public var clientDataJSON: [UInt8]
    public var attestationObject: [UInt8]
    public var transports: [String]
    public var name: String?

    public init(credentialID: [UInt8], clientDataJSON: [UInt8], attestationObject: [UInt8], transports: [String], name: String?) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.attestationObject = attestationObject
        self.transports = transports
        self.name = name
    }
}

/// A passkey sign-in as the browser returned it (`AuthenticationResponseJSON`), decoded.
public struct PasskeyAssertion: Sendable {
    public var credentialID: [UInt8]
    public var clientDataJSON: [UInt8]
    public var authenticatorData: [UInt8]
    public var signature: [UInt8]
    public var userHandle: [UInt8]?

    public init(credentialID: [UInt8], clientDataJSON: [UInt8], authenticatorData: [UInt8], signature: [UInt8], userHandle: [UInt8]?) {
        self.credentialID = credentialID
        self.clientDataJSON = clientDataJSON
        self.authenticatorData = authenticatorData
        self.signature = signature
        self.userHandle = userHandle
    }
}
