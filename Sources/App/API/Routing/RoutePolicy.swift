import Accounts
import Cryptography
import FoundationEssentials

/// What a route must have, declared with it as data: who may call it, the throttles it counts
/// against, the hashing lane its password work takes, and what it writes to the audit log. The
/// server's layers above read it to apply the policies (`exosphere routes` prints it); the router only
/// keeps it with the route.
public struct RoutePolicy: Sendable, Equatable {
    /// Who may call the route.
    public enum Authentication: String, Sendable, CaseIterable {
        /// Anyone.
        case none
        /// A user's session: `Authorization: Bearer <accessToken>`.
        case user
        /// An administrator's session: `Authorization: Bearer <adminToken>`.
        case admin
        /// Whoever holds a URL the server signed (`exp` and `sig` in its query).
        case signedURL = "signed_url"
        /// Whoever holds a single-use token the server mailed or printed, in the body.
        case linkToken = "link_token"
    }

    /// What a user's route needs of its caller beyond a session.
    public enum Requirement: String, Sendable, CaseIterable, Comparable {
        /// The account's address is verified (`403 email_unverified`).
        case verifiedAddress = "verified_address"
        /// The session's holder proved a credential within `--recent-authentication-seconds`
        /// (`403 reauthentication_required`; then `POST /users/me/reauthenticate`).
        case recentAuthentication = "recent_authentication"
        /// An administrator's second factor is on, where the deployment requires one (`--admin-mfa
        /// required`; `403 mfa_enrolment_required`): every administrator's route but the enrolment's.
        case adminSecondFactor = "admin_second_factor"

        public static func < (a: Requirement, b: Requirement) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }
    }

    /// A throttle: what its counter is kept per.
    public enum Throttle: String, Sendable, CaseIterable, Comparable {
        /// The client address (IPv6: one /64).
        case perAddress = "address"
        /// The email the request names, from every address together.
        case perEmail = "email"
        /// The email the request names, from one client address: the owner rule (an address
        /// exhausts its own tries, never the owner's).
        case perEmailAndAddress = "email+address"
        /// The signed-in user.
        case perUser = "user"

        public static func < (a: Throttle, b: Throttle) -> Bool {
            allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
        }

        /// A subject of this kind (for checking that an action has a rule per it).
        var example: ThrottleSubject {
            switch self {
            case .perAddress: .address("192.0.2.1")
            case .perEmail: .email("ann@example.com")
            case .perEmailAndAddress: .emailAndAddress(email: "ann@example.com", address: "192.0.2.1")
            case .perUser: .user(UUID())
            }
        }
    }

    /// The hashing pool's lane a route's password work takes.
    public enum Hashing: String, Sendable, CaseIterable {
        /// Someone waits for it (a sign-in, a password change): served first.
        case interactive
        /// New accounts: queued behind interactive work, so that a wave of registrations cannot
        /// delay sign-ins.
        case bulk

        /// The hashing pool's lane.
        var lane: HashingPool.Lane {
            switch self {
            case .interactive: .interactive
            case .bulk: .bulk
            }
        }
    }

    /// What the route writes to the administrators' audit log.
    public enum Audit: Sendable, Equatable {
        case none
        /// A read: an entry under this action, written once the answer is made
        /// (the request fails if it cannot be written).
        case read(String)
        /// A change: the service writes its entry (named by what changed) in the change's own
        /// transaction.
        case change

        /// How `exosphere routes` shows it.
        public var description: String {
            switch self {
            case .none: "-"
            case .read(let action): "read " + action
            case .change: "change"
            }
        }
    }

    public var authentication: Authentication
    /// What a user's route needs beyond the session, checked right after it.
    public var requirements: Set<Requirement>
    /// Counted per these, before any password is hashed.
    public var throttles: Set<Throttle>
    /// The lane of the hashing pool the route verifies or hashes a password on, nil when it
    /// hashes none.
    public var hashing: Hashing?
    /// How many of the route's responses (event streams) one user may hold open at once on an
    /// instance, nil for no cap (`429 too_many_streams` beyond).
    public var openPerUser: Int?
    public var audit: Audit

    public init(
        _ authentication: Authentication, requirements: Set<Requirement> = [], throttles: Set<Throttle> = [], hashing: Hashing? = nil,
        openPerUser: Int? = nil, audit: Audit = .none
    ) {
        self.authentication = authentication
        self.requirements = requirements
        self.openPerUser = openPerUser
        self.throttles = throttles
        self.hashing = hashing
        self.audit = audit
    }

    /// Anyone, nothing counted, nothing audited: pages, health, the document.
    public static let open = RoutePolicy(.none)

    /// Whether the route needs a session (a user's or an administrator's) in `Authorization`.
    public var needsBearerToken: Bool { authentication == .user || authentication == .admin }
}
