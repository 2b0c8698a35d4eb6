/// What a new password must be, checked before any hashing.
public struct PasswordPolicy: Sendable {
    /// At least this many characters (Unicode scalar values).
    public var minCharacters = 8
    /// At most this many UTF-8 bytes, so nobody makes us hash a megabyte.
    public var maxBytes = 1024

    public init() {}

    /// Throws `weak_password` naming `field` when `password` breaks the policy.
    public func validate(_ password: String, field: String) throws(AccountsError) {
        if password.utf8.count > maxBytes {
            throw .field(field, .weakPassword, "must be at most \(maxBytes) bytes")
        }
        if password.unicodeScalars.count < minCharacters {
            throw .field(field, .weakPassword, "must be at least \(minCharacters) characters")
        }
    }
}
