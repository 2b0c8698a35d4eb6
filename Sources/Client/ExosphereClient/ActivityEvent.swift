import Foundation

/// One of the signed-in user's security events, from `Exosphere.activity(pageSize:)`: a sign-in,
/// a failed sign-in, a password change, … Show them so that a user can spot what they did not do.
public struct ActivityEvent: Identifiable, Hashable, Sendable {
    /// What happened. An enum of the types this version knows, plus `unknown` for a type a newer
    /// server adds, so that such an event is still listed.
    public enum EventType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// A sign-in (`method` says how: password, passkey, Apple, Google); registration and a
        /// password reset open their sessions without one.
        case signedIn
        /// A sign-in with the account's email and a wrong password.
        case signInFailed
        /// A sign-out, of any scope.
        case signedOut
        /// One session ended by name (`Exosphere.revokeSession(_:)`).
        case sessionRevoked
        /// The password was changed with the old one.
        case passwordChanged
        /// Someone asked for a password reset link for the account's address.
        case passwordResetRequested
        /// The password was set with a mailed reset link.
        case passwordReset
        /// The email address was changed.
        case emailChanged
        /// The email address was verified with a mailed link.
        case emailVerified
        /// An attempt refused because too many had failed: sign-in, or the checks of the current
        /// password, locked for a while.
        case lockedOut
        /// Everything the account holds was downloaded (`GET /users/me/export`).
        case dataExported
        /// Sign in with Apple or Google was linked to the account, or unlinked.
        case identityLinked, identityUnlinked
        /// A passkey was registered, or deleted.
        case passkeyAdded, passkeyRemoved
        /// A type this version of the client does not know, as the server wrote it.
        case unknown(String)

        /// The type the server writes as `rawValue` (`signed_in`), known to this version or not.
        public init(rawValue: String) {
            switch rawValue {
            case "signed_in": self = .signedIn
            case "sign_in_failed": self = .signInFailed
            case "signed_out": self = .signedOut
            case "session_revoked": self = .sessionRevoked
            case "password_changed": self = .passwordChanged
            case "password_reset_requested": self = .passwordResetRequested
            case "password_reset": self = .passwordReset
            case "email_changed": self = .emailChanged
            case "email_verified": self = .emailVerified
            case "locked_out": self = .lockedOut
            case "data_exported": self = .dataExported
            case "identity_linked": self = .identityLinked
            case "identity_unlinked": self = .identityUnlinked
            case "passkey_added": self = .passkeyAdded
            case "passkey_removed": self = .passkeyRemoved
            default: self = .unknown(rawValue)
            }
        }

        /// The type as the API writes it: `signed_in`.
        public var rawValue: String {
            switch self {
            case .signedIn: "signed_in"
            case .signInFailed: "sign_in_failed"
            case .signedOut: "signed_out"
            case .sessionRevoked: "session_revoked"
            case .passwordChanged: "password_changed"
            case .passwordResetRequested: "password_reset_requested"
            case .passwordReset: "password_reset"
            case .emailChanged: "email_changed"
            case .emailVerified: "email_verified"
            case .lockedOut: "locked_out"
            case .dataExported: "data_exported"
            case .identityLinked: "identity_linked"
            case .identityUnlinked: "identity_unlinked"
            case .passkeyAdded: "passkey_added"
            case .passkeyRemoved: "passkey_removed"
            case .unknown(let rawValue): rawValue
            }
        }

        /// `rawValue`.
        public var description: String { rawValue }

        // Equal by the type the server wrote, so that `.unknown("signed_in")` made by hand is
        // `.signedIn` and the raw value stays the one identity.
        /// Whether both are the same type of event.
        public static func == (lhs: EventType, rhs: EventType) -> Bool { lhs.rawValue == rhs.rawValue }

        /// Hashes `rawValue`, as `==` compares it.
        public func hash(into hasher: inout Hasher) { hasher.combine(rawValue) }
    }

    /// Opaque; do not parse.
    public let id: String
    /// What happened.
    public let type: EventType
    /// When it happened.
    public let at: Date
    /// The client's address as the server saw it (behind a trusted proxy, the forwarded one);
    /// nil when not recorded.
    public let ipAddress: String?
    /// The `User-Agent` of the request (`Exosphere.Configuration.userAgent`), at most 512
    /// characters; nil when there was none.
    public let userAgent: String?
    /// An administrator did it (ended a session, edited the profile): then no address or device
    /// is shown, the operator's being none of the user's business.
    public let byAdministrator: Bool
    /// How a sign-in was made (`password`, `passkey`, `apple`, `google`); nil for other events.
    public let method: String?

    init(json: JSONValue) throws {
        guard let id = json["id"]?.stringValue, let type = json["type"]?.stringValue,
            let at = json["at"]?.stringValue.flatMap(Timestamp.parse)
        else {
            throw ExosphereError.invalidResponse("an activity event without id, type or time")
        }
        self.id = id
        self.type = EventType(rawValue: type)
        self.at = at
        self.ipAddress = json["ipAddress"]?.stringValue
        self.userAgent = json["userAgent"]?.stringValue
        self.byAdministrator = json["by"]?.stringValue == "administrator"
        self.method = json["method"]?.stringValue
    }
}

/// One page of `Exosphere.activityPage(after:limit:)`.
public struct ActivityPage: Sendable, Hashable {
    /// Newest first.
    public let events: [ActivityEvent]
    /// The cursor of the next (older) page, or nil on the last page. Opaque.
    public let next: String?
}
