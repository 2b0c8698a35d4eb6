import FoundationEssentials
import Cryptography
import JSON

/// A user as stored: identity, names, custom fields and the version that makes the ETag.
public struct User: Sendable, Equatable {
    public let id: UUID
    /// The address, as the user wrote it; nil for a guest (and for an account a provider's
    /// sign-in made without one).
    public var email: String?
    public var firstname: String
    public var lastname: String
    public var emailVerified: Bool
    public let createdAt: Date
    public var updatedAt: Date
    /// Custom fields, already valid for their types.
    public var data: JSONObject
    public var version: Int64
    /// An address the user asked to move to, until a link mailed to it confirms it (24 hours at
    /// most); nil when no change is pending.
    public var pendingEmail: String? = nil
    /// Made by `POST /users/guest`, with no way back in yet but its sessions: no address, no
    /// password, no passkey, no identity.
    public var isGuest = false

    /// A strong validator that changes with every write and differs between users.
    public var etag: String {
        // `"<first 8 hex digits of the id>-<version>"`, built in place: every profile response has one.
        let version = String(version)
        return String(unsafeUninitializedCapacity: 11 + version.utf8.count) { buffer in
            var out = 0
            buffer[out] = UInt8(ascii: "\"")
            out += 1
            withUnsafeBytes(of: id.uuid) { bytes in
                for index in 0..<4 {
                    buffer[out] = Hex.digit(bytes[index] >> 4)
                    buffer[out + 1] = Hex.digit(bytes[index] & 0xF)
                    out += 2
                }
            }
            buffer[out] = UInt8(ascii: "-")
            out += 1
            for byte in version.utf8 {
                buffer[out] = byte
                out += 1
            }
            buffer[out] = UInt8(ascii: "\"")
            return out + 1
        }
    }
}

/// One sign-in of a user: the row behind a bearer token.
public struct Session: Sendable, Equatable {
    public let id: UUID
    public let userID: UUID
    public let createdAt: Date
    public var lastSeenAt: Date
    /// When the session ends: the earlier of its absolute end and `lastSeenAt` + the idle timeout.
    public var expiresAt: Date
    public let userAgent: String?
    /// When its holder last proved a credential: a sign-in, a registration, a reset
    /// confirmation, a reauthentication.
    public var authenticatedAt: Date
}

/// A new session: the bearer token (shown to the client once) and its row.
public struct IssuedSession: Sendable {
    /// The token text; only its SHA-256 is stored.
    public let accessToken: String
    public let session: Session
    public let user: User
}
