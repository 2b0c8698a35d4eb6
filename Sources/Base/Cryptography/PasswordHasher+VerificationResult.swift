extension PasswordHasher {
    /// The answer of `PasswordHasher.verify`.
    public enum VerificationResult: Sendable, Hashable {
        /// The password matches and the hash uses the current parameters.
        case valid
        /// The password matches but the hash uses other parameters: store a new hash of it.
        case validNeedsRehash
        /// The password does not match.
        case invalid

        /// Whether the password matched, whatever the parameters.
        public var isValid: Bool { self != .invalid }
    }
}
