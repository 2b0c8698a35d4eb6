import Foundation

/// The signed-in user's profile: a value that an app edits and hands to `Exosphere.save(_:)`.
///
/// It remembers the server's copy it was read from, so that `save` sends only what changed (a
/// JSON Merge Patch) on the condition that the server's copy is still that one (`If-Match`).
/// Custom fields are read and written with `date(forKey:)`, `double(forKey:)`, `set(_:forKey:)`
/// and the rest (`User+CustomFields.swift`), or decoded at once with `decodeData(as:)`.
public struct User: Identifiable, Hashable, Sendable {
    /// Opaque; do not parse.
    public let id: String
    /// The login identity. Setting another address and saving does not move the account at
    /// once: the server keeps `email` and sets `pendingEmail` until the link it mails to the new
    /// address is opened (`Exosphere.confirmEmailChange(token:)`). Nil for a guest
    /// (`Exosphere.signInAsGuest()`) until the first address is confirmed the same way.
    public var email: String?
    /// At most 100 characters; may be empty.
    public var firstname: String
    /// At most 100 characters; may be empty.
    public var lastname: String
    /// Whether the server has verified `email`.
    public let emailVerified: Bool
    /// An address the user asked to move to, waiting for the link mailed to it (24 hours); nil
    /// when no change is pending. Sign-in, resets and mail use `email` until then.
    public let pendingEmail: String?
    /// A guest: an account made by `Exosphere.signInAsGuest()` with no way back in yet but this
    /// session (no address, password, passkey or identity). It becomes a full account, keeping
    /// its id, fields and images, when it gains one: a confirmed address (save `email`, then the
    /// mailed link), a passkey, or Apple or Google.
    public let isGuest: Bool
    /// When the user registered.
    public let createdAt: Date
    /// The last write to the account (profile, email or password) as of this copy.
    public let updatedAt: Date
    /// The custom profile fields by name. Edit them here or through `set(_:forKey:)`.
    public var data: [String: FieldValue]
    /// The server's entity tag of the copy this value was read from, when the response that
    /// carried it had one (`GET`, `PUT`, `PATCH /users/me`; not sign-in or registration).
    public let etag: String?

    /// The editable part of the server's copy, to compute what changed.
    struct Snapshot: Hashable, Sendable {
        var email: String?
        var firstname: String
        var lastname: String
        var data: [String: FieldValue]
    }

    let original: Snapshot

    /// Reads the user object of the API.
    init(json: JSONValue, etag: String?) throws {
        guard let id = json["id"]?.stringValue, let emailValue = json["email"], emailValue.stringValue != nil || emailValue == .null,
            let createdAt = json["createdAt"]?.stringValue.flatMap(Timestamp.parse),
            let updatedAt = json["updatedAt"]?.stringValue.flatMap(Timestamp.parse)
        else {
            throw ExosphereError.invalidResponse("a user without id, email or timestamps")
        }
        var data: [String: FieldValue] = [:]
        for (key, value) in json["data"]?.objectValue ?? [:] {
            guard let field = FieldValue(json: value) else { continue }  // null, or a kind a newer server might add
            data[key] = field
        }
        let email = emailValue.stringValue
        self.id = id
        self.email = email
        self.firstname = json["firstname"]?.stringValue ?? ""
        self.lastname = json["lastname"]?.stringValue ?? ""
        self.emailVerified = json["emailVerified"]?.boolValue ?? false
        self.pendingEmail = json["pendingEmail"]?.stringValue
        self.isGuest = json["isGuest"]?.boolValue ?? false
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.data = data
        self.etag = etag
        self.original = Snapshot(email: email, firstname: firstname, lastname: lastname, data: data)
    }

    /// The server's copy as the API writes it, for the session store.
    var serverJSON: JSONValue {
        .object([
            "id": .string(id), "email": original.email.map { .string($0) } ?? .null, "firstname": .string(original.firstname),
            "lastname": .string(original.lastname), "emailVerified": .bool(emailVerified),
            "pendingEmail": pendingEmail.map { .string($0) } ?? .null, "isGuest": .bool(isGuest),
            "createdAt": .string(Timestamp.format(createdAt)), "updatedAt": .string(Timestamp.format(updatedAt)),
            "data": .object(original.data.mapValues(\.json)),
        ])
    }

    // MARK: - Changes

    /// Whether this value differs from the server's copy it was read from.
    public var hasUnsavedChanges: Bool { mergePatch != nil }

    /// The JSON Merge Patch (RFC 7396) from the server's copy to this value; nil when equal.
    var mergePatch: JSONValue? {
        var patch: [String: JSONValue] = [:]
        if email != original.email { patch["email"] = email.map { .string($0) } ?? .null }
        if firstname != original.firstname { patch["firstname"] = .string(firstname) }
        if lastname != original.lastname { patch["lastname"] = .string(lastname) }
        var fields: [String: JSONValue] = [:]
        for (key, value) in data where original.data[key] != value { fields[key] = value.json }
        for key in original.data.keys where data[key] == nil { fields[key] = .null }
        if !fields.isEmpty { patch["data"] = .object(fields) }
        return patch.isEmpty ? nil : .object(patch)
    }

    /// This value's unsaved changes applied to `newer`, another copy of the same user (typically
    /// `ExosphereError.serverCopy` after a conflict): a field changed here wins, every other
    /// field is `newer`'s. Saving the result is conditional on `newer`.
    public func rebased(onto newer: User) -> User {
        var result = newer
        if email != original.email { result.email = email }
        if firstname != original.firstname { result.firstname = firstname }
        if lastname != original.lastname { result.lastname = lastname }
        for (key, value) in data where original.data[key] != value { result.data[key] = value }
        for key in original.data.keys where data[key] == nil { result.data[key] = nil }
        return result
    }
}
