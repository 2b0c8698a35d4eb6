/// The cost of a scrypt password hash: `N = 2^logN`, block size `r`, parallelism `p`, as
/// written in a PHC string (`ln=17,r=8,p=1`).
///
/// Every value of this type is within `acceptedLogN`, `acceptedR`, `acceptedP` and
/// `maximumMemory`. The bounds apply to *verifying* too, because a stored hash is data and data
/// can be hostile: a planted `ln=30` must not make one sign-in allocate 128 GiB.
public struct ScryptParameters: Sendable, Hashable, CustomStringConvertible {
    /// `log2(N)`, the CPU and memory cost.
    public let logN: Int
    /// The block size.
    public let r: Int
    /// The parallelism (cost multiplier at constant memory).
    public let p: Int

    /// OWASP's first recommendation (N=2^17, r=8, p=1): about 128 MiB and 0.5 s on the project's
    /// machines.
    public static let owasp = ScryptParameters(unchecked: 17, 8, 1)

    /// OWASP's equal-strength configuration with an eighth of the memory (N=2^14, r=8, p=5):
    /// 16 MiB a hash, so a server hashing on every core stays small. The default for new hashes.
    public static let owaspCompact = ScryptParameters(unchecked: 14, 8, 5)

    /// Cheap parameters (N=2^10, r=8, p=1, 1 MiB) for tests. Creating hashes with them needs
    /// `PasswordHasher(parameters:allowWeakParameters: true)`.
    public static let testing = ScryptParameters(unchecked: 10, 8, 1)

    /// Accepted `logN` values.
    public static let acceptedLogN = 10...20
    /// Accepted `r` values.
    public static let acceptedR = 1...32
    /// Accepted `p` values.
    public static let acceptedP = 1...16
    /// The most memory (`maxMemory`) any accepted parameters may need: 1 GiB plus a little, so
    /// that N=2^20 with r=8 fits but N=2^20 with r=32 (4 GiB) does not.
    public static let maximumMemory = 1 << 30 + 1 << 20

    /// Parameters within the accepted bounds; throws `SecurityError` (`invalidParameters`)
    /// otherwise.
    public init(logN: Int, r: Int, p: Int) throws {
        guard Self.acceptedLogN.contains(logN), Self.acceptedR.contains(r),
            Self.acceptedP.contains(p)
        else {
            throw SecurityError(.invalidParameters, detail: "scrypt parameters out of bounds")
        }
        self.init(unchecked: logN, r, p)
        guard maxMemory <= Self.maximumMemory else {
            throw SecurityError(.invalidParameters, detail: "scrypt parameters need too much memory")
        }
    }

    private init(unchecked logN: Int, _ r: Int, _ p: Int) {
        self.logN = logN
        self.r = r
        self.p = p
    }

    /// `N = 2^logN`.
    public var n: Int { 1 << logN }

    /// The exact memory cap OpenSSL needs for these parameters: `128·r·(N+2) + 128·r·p` bytes
    /// (134,220,800 for OWASP's parameters). The bounds keep it far from overflow.
    public var maxMemory: Int { 128 * r * (n + 2) + 128 * r * p }

    /// OWASP's scrypt configurations of equal strength: each step down halves the memory
    /// (128·N·r bytes per hash) and raises the parallelism to keep the work.
    public static let owaspConfigurations: [ScryptParameters] = [
        .owasp,
        ScryptParameters(unchecked: 16, 8, 2),
        ScryptParameters(unchecked: 15, 8, 3),
        .owaspCompact,
        ScryptParameters(unchecked: 13, 8, 10),
    ]

    /// Whether these parameters reach one of OWASP's configurations in every component, the
    /// floor for new hashes.
    public var isAtLeastOWASP: Bool {
        Self.owaspConfigurations.contains { logN >= $0.logN && r >= $0.r && p >= $0.p }
    }

    /// The PHC parameter text, e.g. `ln=17,r=8,p=1`.
    public var description: String { "ln=\(logN),r=\(r),p=\(p)" }
}
