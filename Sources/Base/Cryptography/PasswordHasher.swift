/// Hashes and verifies passwords with scrypt, stored as PHC strings
/// (`$scrypt$ln=17,r=8,p=1$<salt>$<key>`).
///
/// Each call costs what `parameters` cost (about 0.5 s and 128 MiB at OWASP's): run it on a
/// `HashingPool`, never on an I/O thread. Passwords are hashed as their full UTF-8 bytes, with
/// no truncation (unlike bcrypt's 72 bytes) and no Unicode normalization.
public struct PasswordHasher: Sendable {
    /// The parameters of new hashes; stored hashes with other parameters verify as
    /// `validNeedsRehash`.
    public let parameters: ScryptParameters

    /// Stands in for the hash of an unknown account in `dummyVerify`.
    private let dummy: ScryptPHCString

    /// A hasher at OWASP's parameters.
    public init() {
        self.init(validated: .owaspCompact)
    }

    /// A hasher creating hashes with `parameters`.
    ///
    /// Throws `SecurityError` (`weakParameters`) if `parameters` are below OWASP's, unless
    /// `allowWeakParameters` is set, which only tests should do.
    public init(parameters: ScryptParameters, allowWeakParameters: Bool = false) throws {
        guard parameters.isAtLeastOWASP || allowWeakParameters else {
            throw SecurityError(.weakParameters, detail: "scrypt \(parameters) is below OWASP")
        }
        self.init(validated: parameters)
    }

    private init(validated parameters: ScryptParameters) {
        self.parameters = parameters
        dummy = ScryptPHCString(
            parameters: parameters,
            salt: Array("exosphere:dummy!".utf8),
            key: [UInt8](repeating: 0, count: ScryptPHCString.keyLength))
    }

    /// A PHC string for `password` with a fresh 16-byte random salt.
    ///
    /// Throws `SecurityError` with code `randomFailed` or `hashingFailed`.
    public func hash(password: [UInt8]) throws -> String {
        let salt = try SecureRandom.bytes(count: ScryptPHCString.saltLength)
        let key = try Self.derive(password: password, salt: salt, parameters: parameters)
        return ScryptPHCString(parameters: parameters, salt: salt, key: key).text
    }

    /// A PHC string for the UTF-8 bytes of `password`.
    public func hash(password: String) throws -> String {
        try hash(password: Array(password.utf8))
    }

    /// Whether `password` matches the stored PHC string `phc`, compared in constant time.
    ///
    /// Fails closed: a string that is not exactly a supported scrypt PHC string (another
    /// algorithm, parameters out of bounds, wrong salt or key length, extra fields, bad base64)
    /// throws `SecurityError` (`malformedHash`) rather than answering; so does a failed
    /// derivation (`hashingFailed`). Only a well-formed hash answers `.invalid`.
    public func verify(password: [UInt8], phc: String) throws -> VerificationResult {
        try verify(password: password, stored: try ScryptPHCString(parsing: phc))
    }

    /// `verify` with the UTF-8 bytes of `password`.
    public func verify(password: String, phc: String) throws -> VerificationResult {
        try verify(password: Array(password.utf8), phc: phc)
    }

    /// Spends the work of a `verify` at the current parameters on a fixed dummy hash, so that
    /// signing in with an unknown email costs the same time as a wrong password.
    public func dummyVerify(password: [UInt8]) throws {
        _ = try verify(password: password, stored: dummy)
    }

    /// `dummyVerify` with the UTF-8 bytes of `password`.
    public func dummyVerify(password: String) throws {
        try dummyVerify(password: Array(password.utf8))
    }

    private func verify(password: [UInt8], stored: ScryptPHCString) throws -> VerificationResult {
        let key = try Self.derive(
            password: password, salt: stored.salt,
            parameters: stored.parameters)
        guard ConstantTime.equals(key, stored.key) else { return .invalid }
        return stored.parameters == parameters ? .valid : .validNeedsRehash
    }

    private static func derive(
        password: [UInt8], salt: [UInt8], parameters: ScryptParameters
    ) throws -> [UInt8] {
        try Scrypt.deriveKey(
            password: password, salt: salt, n: UInt64(parameters.n), r: UInt64(parameters.r),
            p: UInt64(parameters.p), keyLength: ScryptPHCString.keyLength,
            maxMemory: UInt64(parameters.maxMemory))
    }
}
