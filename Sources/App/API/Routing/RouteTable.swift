import Accounts
import Images
import FoundationEssentials
import HTTP
import HTTPServer
import Postgres
import PostgresLoop

/// What a route's policies produced, for its handler: the request, its path parameters, who
/// sent it (the signed-in user or administrator), where it came from, and how its statements
/// run. A handler never authenticates, resolves the client or audits by itself.
struct Call: Sendable {
    let request: Request
    let context: RequestContext
    let authenticator: Authenticator
    /// Who the route's authentication found.
    let principal: Principal
    /// Where the route's statements run (see `statements`).
    let database: DatabaseAccess

    /// Set on an administrator's request: what it does shows in the user's activity as theirs.
    var byAdministrator: Bool { if case .admin = principal { true } else { false } }

    /// The signed-in user of a `.user` route.
    var signedIn: SignedIn {
        guard case .user(let signedIn) = principal else { preconditionFailure("\(request.path): not a user's route") }
        return signedIn
    }

    /// The administrator of an `.admin` route.
    var admin: Admin {
        guard case .admin(let admin) = principal else { preconditionFailure("\(request.path): not an administrator's route") }
        return admin
    }

    /// Who sent the request: its client address seen through trusted proxies, its user agent,
    /// and the cancellation that tells when the client has gone. Made when asked: most reads
    /// never need it.
    var origin: RequestOrigin {
        var origin = authenticator.origin(request, context)
        origin.byAdministrator = byAdministrator
        return origin
    }

    /// The executor of the request's statements: the loop's pipelined connection for a route
    /// that runs on its event loop, a pooled connection on the worker pool's thread otherwise.
    var statements: any QueryExecutor { database.executor(context) }

    /// What the signed URL of a `.signedURL` route grants.
    var signedURL: SignedURLGrant {
        guard case .signedURL(let grant) = principal else { preconditionFailure("\(request.path): not a signed URL's route") }
        return grant
    }

    func parameter(_ name: String) -> String? { context.parameters[name] }

    /// Runs `body`, which may block, on the worker pool when the handler runs on its event loop
    /// (and resumes there), or right here when it already runs on a worker.
    func blocking<T: Sendable>(_ body: @Sendable () throws -> T) async throws -> T {
        try await context.blocking(body)
    }
}

extension RequestContext {
    /// Runs `body`, which may block, on the worker pool when the request's task runs on its event
    /// loop (and resumes there), or right here when it already runs on a worker.
    func blocking<T: Sendable>(_ body: @Sendable () throws -> T) async throws -> T {
        guard let loop, loop.isCurrent else { return try body() }
        return try await loop.blocking(body)
    }
}

/// Who a route's authentication found.
enum Principal: Sendable {
    case anyone
    case user(SignedIn)
    case admin(Admin)
    case signedURL(SignedURLGrant)
}

/// What a URL the server signed opens: one image, in the rendition it was signed for, for the
/// seconds left until it expires.
struct SignedURLGrant: Sendable {
    let id: UUID
    let rendition: URLSigner.Rendition
    let secondsLeft: Int
}

/// The signed-in user of a `.user` route and the session the request came with.
struct SignedIn: Sendable {
    /// Read for every route but a pipelined one, whose handler needs the user alone (its session
    /// lookup decodes no more than that, when the session cache is off).
    private let readSession: Session?
    let user: User

    init(session: Session?, user: User) {
        self.readSession = session
        self.user = user
    }

    var session: Session {
        guard let readSession else { preconditionFailure("a pipelined route's authentication reads the user alone") }
        return readSession
    }
}

/// Where the statements of a request run: its event loop's pipelined connection when the route
/// runs on the loop and pipelines are on, else a pooled connection on the calling worker.
struct DatabaseAccess: Sendable {
    let pool: PostgresPool
    let pipelines: Pipelines?

    func executor(_ context: RequestContext) -> any QueryExecutor {
        if let pipelines, let loop = context.loop, loop.isCurrent {
            return LoopExecutor(pipelines: pipelines, pool: pool, loop: loop)
        }
        return PooledExecutor(pool)
    }
}

/// The API's route table. Every route is added with its policy (`RoutePolicy`), and the table
/// applies the policy around the route's one handler, in this order, whatever the handler does
/// (`PolicyChain.run`):
///
/// 1. **authentication** (`authenticate`): the user's or administrator's session, or a signed
///    URL, before the handler runs; for a body over the admission threshold, from the head,
///    before the body is read, and that result is the request's (it is not checked twice);
/// 2. **requirements** of a signed-in user's route: a verified address (`403 email_unverified`),
///    a credential proved within `--recent-authentication-seconds` (`403 reauthentication_required`;
///    with both factors while the second is on); of an administrator's, their second factor where
///    the deployment requires one (`403 mfa_enrolment_required`);
/// 3. **what a user holds open** (`OpenPerUser`): a place among the event streams the user may
///    hold at once (`429 too_many_streams` beyond), kept for as long as the response's stream lives;
/// 4. **the body**, decoded once, for a route that declares its type: the throttles' keys come
///    from it, and the handler gets it;
/// 5. **the hashing lane**: a route that hashes passwords is refused at once (`503`) while the
///    hashing pool is full, before anything is counted, and its handler's hashing runs in the
///    lane it declares (`HashingLane`); a route that declares none cannot hash;
/// 6. **throttles** (`Throttling`): the attempt is counted on every declared counter before the
///    handler runs (`429` when one is full), and settled after it;
/// 7. **the handler**, given a `Call` (and the body);
/// 8. **audit**: a route's read audit is written once its answer is made (the request fails
///    without it); a change's entry is written by the service, in the change's transaction;
/// 9. **cache invalidation**: a route that can write (any method but `GET` and `HEAD`) keeps this
///    instance's session cache true before its answer goes out: a user's route drops the user's
///    entries; any other waits until the cache has applied every change committed before
///    (`Sessions.catchUpWithTheDatabase`), as it cannot know whom it changed. Whether the
///    handler failed or not.
///
/// Where the handler runs is declared too (`RouteExecution`): on the event loop for what never
/// blocks, on the worker pool for what does, and, for routes whose statements can be pipelined,
/// on the loop when pipelines are on.
struct RouteTable {
    private(set) var router = Router()
    /// Every route as declared, in order (`exosphere routes` reads these).
    private(set) var declarations: [Declaration] = []
    /// What the policies need to run; nil in a table built only to be read.
    let services: Services?
    /// What declarations read of the deployment.
    let settings: RouteSettings

    /// What the policy chain runs with.
    struct Services: Sendable {
        let accounts: AccountService
        let authenticator: Authenticator
        let database: DatabaseAccess
        let signer: URLSigner
    }

    /// A table that serves: each route's policies run around its handler.
    init(services: Services, settings: RouteSettings) {
        self.services = services
        self.settings = settings
    }

    /// A table only to be read: the declarations alone, no handler bound, no service needed.
    init(listing settings: RouteSettings) {
        self.services = nil
        self.settings = settings
    }

    /// Every route's handler.
    typealias Handler = @Sendable (Call) async throws -> Response
    /// The handler of a route whose body the table decodes.
    typealias BodyHandler<Body> = @Sendable (Call, Body) async throws -> Response
    /// How a route's body is read: from the call, once, before its throttles.
    typealias BodyDecoder<Body> = @Sendable (Call) async throws -> Body

    /// Adds the routes `C` declares, their handlers bound to `controller` (nil when the table is only read).
    mutating func mount<C: Controller>(_ type: C.Type, _ controller: C?) {
        var routes = Routes<C>(table: self, controller: controller)
        C.declare(&routes)
        self = routes.table
    }

    /// Declares a route and, in a table that serves, adds it with its policy chain.
    fileprivate mutating func add<Body: Sendable>(
        _ method: HTTPMethod, _ pattern: String, _ authentication: RoutePolicy.Authentication,
        requires requirements: Set<RoutePolicy.Requirement> = [], body decode: BodyDecoder<Body>?, throttle throttling: Throttling<Body>?,
        hashing: RoutePolicy.Hashing?, openPerUser: Int? = nil, audit: RoutePolicy.Audit = .none, execution: RouteExecution,
        bodyLimit: Router.BodyLimit?, _ handler: BodyHandler<Body>?, readAudit: AuditAction? = nil
    ) {
        let policy = RoutePolicy(
            authentication, requirements: requirements, throttles: throttling?.kinds ?? [], hashing: hashing, openPerUser: openPerUser,
            audit: audit)
        precondition(openPerUser == nil || authentication == .user, "\(method) \(pattern): a cap per user is a signed-in user's")
        precondition(
            requirements.subtracting([.adminSecondFactor]).isEmpty || authentication == .user,
            "\(method) \(pattern): these requirements are a signed-in user's")
        precondition(!requirements.contains(.adminSecondFactor) || authentication == .admin, "\(method) \(pattern): an administrator's")
        precondition(
            !requirements.contains(.recentAuthentication) || execution != .pipelined,
            "\(method) \(pattern): a pipelined route reads no session, so it cannot check when it was authenticated")
        let writes = Self.writes(method)
        if execution == .loop || execution == .pipelined {
            precondition(!writes || policy.authentication == .user, "\(method) \(pattern): a write that waits for the cache never runs on a loop")
            precondition(policy.audit == .none && policy.hashing == nil, "\(method) \(pattern): audits and hashing block: not on a loop")
        }
        let declaration = Declaration(
            method: method, pattern: pattern, policy: policy, execution: execution, bodyLimit: bodyLimit?.largest ?? settings.defaultBodyLimit)
        declarations.append(declaration)
        guard let services else { return }
        guard let handler, let decode else { preconditionFailure("\(method) \(pattern): a table that serves needs every handler") }
        if let throttling {
            for counter in throttling.counters {
                let action = counter.action ?? throttling.action
                precondition(
                    services.accounts.configuration.rule(for: ThrottleKey(action, counter.kind.example)) != nil,
                    "\(method) \(pattern): \(action) has no rule per \(counter.kind)")
            }
        }
        let chain = PolicyChain(
            policy: policy, readAudit: readAudit, writes: writes, accounts: services.accounts, authenticator: services.authenticator,
            database: services.database, signer: services.signer, needsSession: execution != .pipelined,
            openPerUser: openPerUser.map(OpenPerUser.init))
        // A session's route authenticates from the head when the body is large (see the order above).
        let admission: Router.Admission? =
            if policy.needsBearerToken {
                { head, context in try await chain.authenticate(head.headers, head.query, context) }
            } else {
                nil
            }
        let run: Router.Handler = { request, context in
            try await chain.run(request, context, body: decode, throttle: throttling, handler)
        }
        router.add(
            method, pattern, execution: execution.executor(pipelined: services.database.pipelines != nil), bodyLimit: bodyLimit,
            admission: admission, declaration: declaration, run)
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

    /// A route as declared: what `exosphere routes` lists.
    struct Declaration: Sendable {
        let method: HTTPMethod
        let pattern: String
        let policy: RoutePolicy
        let execution: RouteExecution
        /// The largest body the route reads, in bytes.
        let bodyLimit: Int
    }
}

/// What route declarations read of the deployment.
struct RouteSettings: Sendable {
    /// The server's default body limit (`ServerConfiguration.limits.maxBodyBytes`).
    var defaultBodyLimit: Int
    /// The largest image an upload may carry (`ImageService.Configuration.maxBytes`).
    var imageMaxBytes: Int
    /// The event streams one user may hold open at once (`Configuration.maxStreamsPerUser`).
    var maxStreamsPerUser = 5

    init(defaultBodyLimit: Int, imageMaxBytes: Int) {
        self.defaultBodyLimit = defaultBodyLimit
        self.imageMaxBytes = imageMaxBytes
    }

    init(_ configuration: Configuration, defaultBodyLimit: Int) {
        self.init(defaultBodyLimit: defaultBodyLimit, imageMaxBytes: configuration.images.maxBytes)
        maxStreamsPerUser = configuration.maxStreamsPerUser
    }
}

/// A set of routes whose handlers belong to one value (a controller, holding the services they
/// use), declared apart from it: `exosphere routes` reads the declarations with no value made,
/// no database opened and no service started.
protocol Controller: Sendable {
    static func declare(_ routes: inout Routes<Self>)
}

/// The routes of one controller as it declares them: each handler is named as a function of the
/// controller (`Self.show`, or a closure given the controller), bound to it when the table serves.
struct Routes<C: Controller> {
    fileprivate(set) var table: RouteTable
    fileprivate let controller: C?

    /// What declarations read of the deployment.
    var settings: RouteSettings { table.settings }

    typealias Bind = (C) -> RouteTable.Handler
    typealias BodyBind<Body> = (C) -> RouteTable.BodyHandler<Body>
    typealias DecoderBind<Body> = (C) -> RouteTable.BodyDecoder<Body>

    /// A route without a session: anyone, a signed URL's holder, or a mailed token's holder
    /// (`authentication` says which; the table checks a signed URL, the service the token).
    mutating func open(
        _ method: HTTPMethod, _ pattern: String, _ authentication: RoutePolicy.Authentication = .none, throttle: Throttling<Void>? = nil,
        hashing: RoutePolicy.Hashing? = nil, execution: RouteExecution = .workers, bodyLimit: Router.BodyLimit? = nil, use bind: @escaping Bind
    ) {
        open(
            method, pattern, authentication, body: Self.noBody, throttle: throttle, hashing: hashing, execution: execution, bodyLimit: bodyLimit,
            use: Self.ignoringBody(bind))
    }

    /// `open`, for a route whose body the table decodes (`body`, a function of the controller)
    /// before its throttles, and hands to its handler.
    mutating func open<Body: Sendable>(
        _ method: HTTPMethod, _ pattern: String, _ authentication: RoutePolicy.Authentication = .none, body: DecoderBind<Body>,
        throttle: Throttling<Body>? = nil, hashing: RoutePolicy.Hashing? = nil, execution: RouteExecution = .workers,
        bodyLimit: Router.BodyLimit? = nil, use bind: BodyBind<Body>
    ) {
        precondition(![.user, .admin].contains(authentication), "\(method) \(pattern): a session's routes are added by user(…) or admin(…)")
        table.add(
            method, pattern, authentication, body: controller.map(body), throttle: throttle, hashing: hashing, execution: execution,
            bodyLimit: bodyLimit, controller.map(bind))
    }

    /// A route of a signed-in user: the session is checked before the handler runs.
    mutating func user(
        _ method: HTTPMethod, _ pattern: String, requires requirements: Set<RoutePolicy.Requirement> = [], throttle: Throttling<Void>? = nil,
        openPerUser: Int? = nil, execution: RouteExecution = .workers, bodyLimit: Router.BodyLimit? = nil, use bind: @escaping Bind
    ) {
        table.add(
            method, pattern, .user, requires: requirements, body: controller.map(Self.noBody), throttle: throttle, hashing: nil,
            openPerUser: openPerUser, execution: execution, bodyLimit: bodyLimit, controller.map(Self.ignoringBody(bind)))
    }

    /// `user`, for a route whose body the table decodes (`body`, a function of the controller)
    /// before its throttles, and hands to its handler.
    mutating func user<Body: Sendable>(
        _ method: HTTPMethod, _ pattern: String, requires requirements: Set<RoutePolicy.Requirement> = [], body: DecoderBind<Body>,
        throttle: Throttling<Body>? = nil, hashing: RoutePolicy.Hashing? = nil, execution: RouteExecution = .workers,
        bodyLimit: Router.BodyLimit? = nil, use bind: BodyBind<Body>
    ) {
        table.add(
            method, pattern, .user, requires: requirements, body: controller.map(body), throttle: throttle, hashing: hashing,
            execution: execution, bodyLimit: bodyLimit, controller.map(bind))
    }

    /// An administrator's route: the admin session is checked before the handler runs; a `.read`
    /// audit is written once the handler has made its answer, and the request fails without it.
    ///
    /// Every administrator's route requires their second factor where the deployment does
    /// (`--admin-mfa required`), but those of the enrolment itself (`enrolling`).
    mutating func admin(
        _ method: HTTPMethod, _ pattern: String, audit: RouteTable.AdminAudit, enrolling: Bool = false, use bind: @escaping Bind
    ) {
        let (body, handler) = (controller.map(Self.noBody), controller.map(Self.ignoringBody(bind)))
        let requirements: Set<RoutePolicy.Requirement> = enrolling ? [] : [.adminSecondFactor]
        switch audit {
        case .read(let action):
            table.add(
                method, pattern, .admin, requires: requirements, body: body, throttle: nil, hashing: nil, audit: .read(action.text),
                execution: .workers, bodyLimit: nil, handler, readAudit: action)
        case .change:
            table.add(
                method, pattern, .admin, requires: requirements, body: body, throttle: nil, hashing: nil, audit: .change, execution: .workers,
                bodyLimit: nil, handler)
        }
    }

    /// The decoder of a route whose handler reads its body itself, if it has one.
    private static func noBody(_: C) -> RouteTable.BodyDecoder<Void> { { _ in () } }

    private static func ignoringBody(_ bind: @escaping Bind) -> BodyBind<Void> {
        { controller in
            let handler = bind(controller)
            return { call, _ in try await handler(call) }
        }
    }
}

/// Where a route's handler runs.
enum RouteExecution: String, Sendable {
    /// On its event loop: the handler never blocks and needs no database (pages, health).
    case loop
    /// On its event loop when pipelines are on, the worker pool otherwise: every statement goes
    /// through `Call.statements`, and nothing else blocks.
    case pipelined
    /// On the worker pool: the handler blocks (pooled connections, hashing, files).
    case workers

    func executor(pipelined pipelines: Bool) -> Router.Execution {
        switch self {
        case .loop: .loop
        case .pipelined: pipelines ? .loop : .workers
        case .workers: .workers
        }
    }
}

/// A route's policies, applied around its handler in the order `RouteTable` lists.
private struct PolicyChain: Sendable {
    let policy: RoutePolicy
    /// The action a read audit writes under.
    let readAudit: AuditAction?
    let writes: Bool
    let accounts: AccountService
    let authenticator: Authenticator
    let database: DatabaseAccess
    let signer: URLSigner
    /// Whether the handler reads the session, beyond the user (`SignedIn.session`).
    let needsSession: Bool
    /// The route's cap on what one user holds open at once, if it has one.
    let openPerUser: OpenPerUser?

    func run<Body: Sendable>(
        _ request: Request, _ context: RequestContext, body decode: RouteTable.BodyDecoder<Body>, throttle throttling: Throttling<Body>?,
        _ handler: RouteTable.BodyHandler<Body>
    ) async throws -> Response {
        // 1. Authentication (already done from the head when the body was large).
        let principal: Principal
        if let admitted = context.admitted as? Principal {
            principal = admitted
        } else {
            principal = try await authenticate(request.headers, request.query, context)
        }
        let call = Call(request: request, context: context, authenticator: authenticator, principal: principal, database: database)
        // 2. What the route requires of the signed-in user beyond the session.
        if !policy.requirements.isEmpty, case .user(let signedIn) = principal {
            if policy.requirements.contains(.verifiedAddress) { try accounts.sessions.requireVerifiedAddress(signedIn.user) }
            if policy.requirements.contains(.recentAuthentication) {
                try accounts.sessions.requireRecentAuthentication(signedIn.session, of: signedIn.user)
                try await accounts.secondFactor.requireBothFactors(signedIn.session, on: call.statements)
            }
        }
        if policy.requirements.contains(.adminSecondFactor), case .admin(let admin) = principal {
            try await accounts.secondFactor.requireAdminFactor(admin, on: call.statements)
        }
        // 9. Cache invalidation, whether the handler failed or not.
        defer {
            if writes {
                if case .user(let signedIn) = principal {
                    accounts.sessions.changed(userID: signedIn.user.id)
                } else {
                    accounts.sessions.catchUpWithTheDatabase()
                }
            }
        }
        // 3. A place among what the user holds open, for as long as the response's stream lives.
        var place: OpenPerUser.Place?
        if let openPerUser, case .user(let signedIn) = principal {
            guard let taken = openPerUser.take(signedIn.user.id) else {
                var headers = HTTPHeaders()
                headers.add(name: "Retry-After", value: "10")
                throw Problem(
                    status: .tooManyRequests, code: .tooManyStreams,
                    detail: "The user has \(openPerUser.limit) streams open here; close one first.", headers: headers)
            }
            place = taken
        }
        // 4. The body.
        let body = try await decode(call)
        // 5. The hashing lane: a full pool refuses before anything is counted. 6. Throttles,
        // around 7. the handler.
        var response: Response
        if let hashing = policy.hashing {
            try accounts.refuseWhenHashingIsFull(for: call.origin)
            response = try await HashingLane.$declared.withValue(hashing.lane) {
                try await throttled(throttling, body, call) { try await handler(call, body) }
            }
        } else {
            response = try await throttled(throttling, body, call) { try await handler(call, body) }
        }
        if let place, let stream = response.file as? any ResponseEventStream { response.file = OpenPerUser.Held(stream, place) }
        // 8. The read audit.
        if let action = readAudit, case .admin(let admin) = principal {
            let target = context.parameters["id"].flatMap { UUID(uuidString: $0) }
            try accounts.administration.audit(admin, action, target: target, origin: call.origin)
        }
        return response
    }

    /// Counts the attempt on the route's counters (`429` when one is full, and `handler` does not
    /// run), runs `handler`, and settles the attempt: a judged failure keeps it; a failure that
    /// judged nothing gives it back; a success does what the route declares.
    private func throttled<Body>(
        _ throttling: Throttling<Body>?, _ body: Body, _ call: Call, _ handler: () async throws -> Response
    ) async throws -> Response {
        guard let throttling else { return try await handler() }
        var keys: [(kind: RoutePolicy.Throttle, key: ThrottleKey, keptOnSuccess: Bool)] = []
        for counter in throttling.counters {
            if let subject = try await counter.subject(body, call) {
                keys.append((counter.kind, ThrottleKey(counter.action ?? throttling.action, subject), counter.action != nil))
            }
        }
        guard !keys.isEmpty else { return try await handler() }
        let (throttles, statements) = (accounts.throttles, call.statements)
        if let checksOnly = throttling.checksOnly, checksOnly(body, call) {
            if let wait = try await throttles.lockedFor(keys.map(\.key), on: statements) {
                throw throttles.refusal(keys.map(\.key), wait: wait, origin: call.origin)
            }
            return try await handler()
        }
        if let wait = try await throttles.acquire(keys.map(\.key), rememberingRefusal: throttling.success == .counts, on: statements) {
            // The refusal names the action whose counter is full (a counter of its own action's).
            var refused = keys.map(\.key)
            for own in keys where own.keptOnSuccess {
                if try await throttles.lockedFor([own.key], on: statements) != nil { refused = [own.key] }
            }
            throw throttles.refusal(refused, wait: wait, origin: call.origin)
        }
        let response: Response
        do {
            response = try await handler()
        } catch {
            if !Throttling<Body>.countsAsAttempt(error) { await throttles.giveBack(keys.map(\.key), on: statements) }
            throw error
        }
        if case .givesBack(let clearing) = throttling.success {
            let given = keys.filter { !$0.keptOnSuccess }
            await throttles.giveBack(given.map(\.key), clearing: given.first { $0.kind == clearing }?.key, on: statements)
        }
        return response
    }

    /// The route's authentication: who sent the request, or the error to answer.
    func authenticate(_ headers: HTTPHeaders, _ query: String?, _ context: RequestContext) async throws -> Principal {
        switch policy.authentication {
        case .user:
            let found = try await accounts.sessions.authenticate(
                token: try Authenticator.token(headers), withSession: needsSession, on: database.executor(context))
            return .user(SignedIn(session: found.session, user: found.user))
        case .admin:
            return .admin(try accounts.administrators.authenticateAdmin(token: try Authenticator.token(headers)))
        case .signedURL:
            return .signedURL(try await verifySignedURL(query, context))
        case .none, .linkToken:
            return .anyone
        }
    }

    /// A signed URL's `exp`, `sig` and `size` checked against its `{id}`: with the keys this
    /// instance knows, at once; else with the stored ones, read on the worker pool. A bad,
    /// expired or another image's signature is `403 invalid_signature`, before the image is
    /// looked up. The size is signed: a URL opens the rendition it was signed for, so a
    /// thumbnail's URL stripped of its size does not open the original.
    private func verifySignedURL(_ query: String?, _ context: RequestContext) async throws -> SignedURLGrant {
        let query = QueryParameters(query)
        guard let text = context.parameters["id"], let id = UUID(uuidString: text),
            let rendition = URLSigner.Rendition(sizeParameter: query["size"])
        else { throw PolicyChain.invalidSignature }
        let (expiry, signature) = (query["exp"], query["sig"])
        var secondsLeft = signer.verifyWithKnownKeys(id: id, expiry: expiry, signature: signature, rendition: rendition)
        if secondsLeft == nil {
            let signer = signer
            secondsLeft = try await context.blocking { signer.verify(id: id, expiry: expiry, signature: signature, rendition: rendition) }
        }
        guard let secondsLeft else { throw PolicyChain.invalidSignature }
        return SignedURLGrant(id: id, rendition: rendition, secondsLeft: secondsLeft)
    }

    private static let invalidSignature = Problem(
        status: .forbidden, code: .invalidSignature, detail: "The URL's signature is invalid or has expired.")
}
