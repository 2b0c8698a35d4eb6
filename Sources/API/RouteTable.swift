import Accounts
import FoundationEssentials
import HTTP
import HTTPServer
import Postgres
import PostgresLoop

/// What a route's policies produced, for its handler: the request, its path parameters, and
/// where it came from. A handler never authenticates, resolves the client or audits by itself.
struct Call {
    let request: Request
    let context: RequestContext
    let authenticator: Authenticator
    /// Set on an administrator's request: what it does shows in the user's activity as theirs.
    let byAdministrator: Bool

    /// Who sent the request: its client address seen through trusted proxies, its user agent,
    /// and the cancellation that tells when the client has gone. Made when asked: most reads
    /// never need it.
    var origin: RequestOrigin {
        var origin = authenticator.origin(request, context)
        origin.byAdministrator = byAdministrator
        return origin
    }

    func parameter(_ name: String) -> String? { context.parameters[name] }
}

/// The signed-in user of a `.user` route and the session the request came with.
struct SignedIn {
    let session: Session
    let user: User
}

/// The API's route table. Every route is added with its policy (`RoutePolicy`), and the policy is
/// applied here, by construction, not in the handler: the method that adds a route fixes its
/// authentication, which runs before the handler (and, for a body over the admission threshold,
/// from the head, before the body is read); a route's read audit is written after its answer is
/// made. Throttles and the hashing lane are declared with the route and applied by the service it
/// calls (the throttles' keys need the body); `RouteTableTests` holds the two together.
///
/// A route that can write (any method but `GET` and `HEAD`) keeps this instance's session cache
/// true before its answer goes out: a user's route drops the user's entries; any other waits until
/// the cache has applied every change committed before (`AccountService.catchUpWithTheDatabase`),
/// as it cannot know whom it changed. Whatever the handler did, and whether it failed or not.
struct RouteTable {
    private(set) var router = Router()
    let accounts: AccountService
    let authenticator: Authenticator

    init(accounts: AccountService, authenticator: Authenticator) {
        self.accounts = accounts
        self.authenticator = authenticator
    }

    typealias OpenHandler = @Sendable (Call) throws -> Response
    typealias UserHandler = @Sendable (Call, SignedIn) throws -> Response
    typealias AdminHandler = @Sendable (Call, Admin) throws -> Response
    /// A handler whose statements run through a `QueryExecutor` (on an event loop's pipelined
    /// connection or a pooled one, see `DatabaseRouting`), given the signed-in user read through it.
    typealias UserDatabaseHandler =
        @Sendable (Call, User, any QueryExecutor, _ respond: @escaping (() throws -> Response) -> Void) -> Void

    /// A route without a session: anyone, a signed URL's holder, or a mailed token's holder
    /// (`authentication` says which; the handler checks the URL or the token).
    mutating func open(
        _ method: HTTPMethod, _ pattern: String, _ authentication: RoutePolicy.Authentication = .none,
        throttles: Set<RoutePolicy.Throttle> = [], hashing: RoutePolicy.Hashing? = nil, execution: Router.Execution = .blocking,
        bodyLimit: Router.BodyLimit? = nil, asynchronous: Router.AsynchronousHandler? = nil, use handler: @escaping OpenHandler
    ) {
        precondition(![.user, .admin].contains(authentication), "\(method) \(pattern): a session's routes are added by user(…) or admin(…)")
        precondition(asynchronous == nil || !Self.writes(method), "\(method) \(pattern): an asynchronous route only reads")
        if case .inline = execution {
            precondition(!Self.writes(method), "\(method) \(pattern): a route that writes waits for the cache, never on a loop")
        }
        let policy = RoutePolicy(authentication, throttles: throttles, hashing: hashing)
        let writes = Self.writes(method)
        router.add(
            method, pattern, policy: policy, execution: execution, bodyLimit: bodyLimit,
            { [accounts, authenticator] request, context in
                defer { if writes { accounts.catchUpWithTheDatabase() } }
                return try handler(Call(request: request, context: context, authenticator: authenticator, byAdministrator: false))
            }, asynchronous: asynchronous)
    }

    /// A route of a signed-in user: the session is checked before the handler runs.
    mutating func user(
        _ method: HTTPMethod, _ pattern: String, throttles: Set<RoutePolicy.Throttle> = [], hashing: RoutePolicy.Hashing? = nil,
        bodyLimit: Router.BodyLimit? = nil, use handler: @escaping UserHandler
    ) {
        let policy = RoutePolicy(.user, throttles: throttles, hashing: hashing)
        let writes = Self.writes(method)
        router.add(
            method, pattern, policy: policy, bodyLimit: bodyLimit, admission: userAdmission,
            { [accounts, authenticator] request, context in
                let (session, user) = try accounts.authenticate(token: try Authenticator.token(request.headers))
                defer { if writes { accounts.changed(userID: user.id) } }
                return try handler(
                    Call(request: request, context: context, authenticator: authenticator, byAdministrator: false),
                    SignedIn(session: session, user: user))
            })
    }

    /// A route of a signed-in user whose statements run through a `QueryExecutor`: the session is
    /// read through the same executor, first, and the handler goes on from its completion.
    mutating func user(
        _ method: HTTPMethod, _ pattern: String, throttles: Set<RoutePolicy.Throttle> = [], on database: DatabaseRouting,
        use handler: @escaping UserDatabaseHandler
    ) {
        let policy = RoutePolicy(.user, throttles: throttles)
        let writes = Self.writes(method)
        router.add(method, pattern, policy: policy, admission: userAdmission, on: database) {
            [accounts, authenticator] request, context, executor, respond in
            let call = Call(request: request, context: context, authenticator: authenticator, byAdministrator: false)
            do {
                accounts.authenticate(token: try Authenticator.token(request.headers), withSession: false, on: executor) { found in
                    switch found {
                    case .success(let found) where writes:
                        handler(call, found.user, executor) { answer in
                            accounts.changed(userID: found.user.id)
                            respond(answer)
                        }
                    case .success(let found): handler(call, found.user, executor, respond)
                    case .failure(let error): respond { throw error }
                    }
                }
            } catch {
                respond { throw error }
            }
        }
    }

    /// An administrator's route: the admin session is checked before the handler runs; a `.read`
    /// audit is written once the handler has made its answer, and the request fails without it.
    mutating func admin(_ method: HTTPMethod, _ pattern: String, audit: AdminAudit, use handler: @escaping AdminHandler) {
        let policy: RoutePolicy
        switch audit {
        case .read(let action): policy = RoutePolicy(.admin, audit: .read(action.text))
        case .change: policy = RoutePolicy(.admin, audit: .change)
        }
        let writes = Self.writes(method)
        router.add(
            method, pattern, policy: policy, admission: adminAdmission,
            { [accounts, authenticator] request, context in
                defer { if writes { accounts.catchUpWithTheDatabase() } }
                let admin = try accounts.authenticateAdmin(token: try Authenticator.token(request.headers))
                let call = Call(request: request, context: context, authenticator: authenticator, byAdministrator: true)
                let response = try handler(call, admin)
                if case .read(let action) = audit {
                    let target = context.parameters["id"].flatMap { UUID(uuidString: $0) }
                    try accounts.audit(admin, action, target: target, origin: call.origin)
                }
                return response
            })
    }

    /// Whether a route of `method` may change something (and so the session cache).
    static func writes(_ method: HTTPMethod) -> Bool { method != .get && method != .head }

    /// What an admin route writes to the audit log.
    enum AdminAudit {
        /// A read: the table writes the entry once the answer is made.
        case read(AuditAction)
        /// A change: the service writes its entry in the change's transaction.
        case change
    }

    /// A user route's admission: the token is checked from the head, before a large body is read
    /// (the handler's authentication checks it again once the body is in).
    private var userAdmission: Router.Admission {
        { [accounts] head, _ in _ = try accounts.authenticatedUser(token: try Authenticator.token(head.headers)) }
    }

    private var adminAdmission: Router.Admission {
        { [accounts] head, _ in _ = try accounts.authenticateAdmin(token: try Authenticator.token(head.headers)) }
    }
}
