import HTTP

/// The route table: method and path pattern to handler, with path parameters such as `{id}`.
public struct Router: Sendable {
    public typealias Handler = @Sendable (Request, RequestContext) throws -> Response
    /// A handler that answers through its `Responder`, now or later, on the event loop.
    public typealias AsynchronousHandler = @Sendable (Request, RequestContext, Responder) -> Void
    /// Decides from the head alone, on the worker pool, whether a large body may be read; throws
    /// the error to answer instead (the connection then closes: the body stays unread).
    public typealias Admission = @Sendable (RequestHead, RequestContext) throws -> Void

    /// Where a handler runs.
    public enum Execution: Sendable {
        /// On the event loop: only for handlers that never block and finish in microseconds.
        case inline
        /// On the worker pool: anything that touches the database, the disk or the hashing pool.
        case blocking
    }

    /// The body a route accepts beyond the server's default (`limits.maxBodyBytes`).
    public struct BodyLimit: Sendable {
        /// The most any request of the route may send, for the route table.
        public let largest: Int
        /// The limit of one request, decided from its head before any of its body is read (an
        /// upload route may allow more for one content type than another).
        let forHead: @Sendable (RequestHead) -> Int

        public init(largest: Int, forHead: @escaping @Sendable (RequestHead) -> Int) {
            self.largest = largest
            self.forHead = forHead
        }

        public static func bytes(_ count: Int) -> BodyLimit { BodyLimit(largest: count) { _ in count } }
    }

    /// One endpoint.
    public struct Route: Sendable {
        public let method: HTTPMethod
        public let pattern: String
        /// What the route must have (authentication, throttles, audit), declared with it.
        public let policy: RoutePolicy
        public let execution: Execution
        /// The body this route accepts; nil means the server's default.
        public let bodyLimit: BodyLimit?
        /// Run before a body over `ServerConfiguration.admissionThreshold` is read (authentication:
        /// an upload with a bad token is refused before its megabytes arrive); nil reads any body.
        public let admission: Admission?
        /// Position in the table, for cheap metric keys.
        let index: Int
        let segments: [Segment]
        let handler: Handler
        /// Runs on the event loop instead of `handler` when set; `handler` stays the fallback it
        /// may hand the request to (`Responder.fallBack`).
        let asynchronousHandler: AsynchronousHandler?

        /// Whether the event loop answers it through `asynchronousHandler`.
        public var isAsynchronous: Bool { asynchronousHandler != nil }
    }

    enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(String)
    }

    /// The outcome of a lookup.
    public enum Match: Sendable {
        case found(Route, parameters: [String: String])
        case methodNotAllowed(allow: [HTTPMethod])
        case notImplemented
        case notFound
    }

    private var staticRoutes: [String: [Route]] = [:]
    private var parameterizedRoutes: [Route] = []
    private var routeCount = 0

    public init() {}

    /// Adds a route; a pattern is `/literal/{parameter}/...`.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, policy: RoutePolicy = .open, execution: Execution = .blocking,
        bodyLimit: BodyLimit? = nil, admission: Admission? = nil,
        _ handler: @escaping Handler, asynchronous: AsynchronousHandler? = nil
    ) {
        let segments = Router.segments(of: pattern).map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}") ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        let route = Route(
            method: method, pattern: pattern, policy: policy, execution: execution, bodyLimit: bodyLimit, admission: admission,
            index: routeCount, segments: segments, handler: handler,
            asynchronousHandler: asynchronous)
        routeCount += 1
        if segments.contains(where: { if case .parameter = $0 { true } else { false } }) {
            parameterizedRoutes.append(route)
        } else {
            staticRoutes[pattern, default: []].append(route)
        }
    }

    /// A route that anyone may call (pages, health, the document).
    public mutating func get(_ pattern: String, execution: Execution = .blocking, use handler: @escaping Handler) {
        add(.get, pattern, execution: execution, handler)
    }

    /// All routes in the order they were added, for documentation and metrics.
    public var routes: [Route] { (staticRoutes.values.flatMap { $0 } + parameterizedRoutes).sorted { $0.index < $1.index } }

    /// Finds the route for a method and a (percent-encoded) path.
    public func match(method: HTTPMethod, path: String) -> Match {
        var candidates: [Route] = staticRoutes[path] ?? []
        var parameters: [String: String] = [:]
        // A literal path belongs to its literal routes alone: `PATCH /users/me/passkeys/registration`
        // is 405 (`Allow: POST`), not `PATCH /users/me/passkeys/{id}` with the id "registration".
        if candidates.isEmpty {
            let parts = Router.segments(of: path)
            for route in parameterizedRoutes {
                if let found = Router.bind(route.segments, to: parts) {
                    if parameters.isEmpty { parameters = found }
                    candidates.append(route)
                }
            }
        }
        guard !candidates.isEmpty else { return .notFound }
        guard HTTPMethod.known.contains(method) else { return .notImplemented }
        if let route = candidates.first(where: { $0.method == method })
            ?? (method == .head ? candidates.first(where: { $0.method == .get }) : nil)
        {
            if route.segments.contains(where: { if case .parameter = $0 { true } else { false } }) {
                parameters = Router.bind(route.segments, to: Router.segments(of: path)) ?? [:]
            }
            return .found(route, parameters: parameters)
        }
        var allow = candidates.map(\.method)
        if allow.contains(.get), !allow.contains(.head) { allow.append(.head) }
        return .methodNotAllowed(allow: allow)
    }

    private static func segments(of path: String) -> [Substring] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { $0 }
    }

    private static func bind(_ pattern: [Segment], to parts: [Substring]) -> [String: String]? {
        guard pattern.count == parts.count else { return nil }
        var parameters: [String: String] = [:]
        for (segment, part) in zip(pattern, parts) {
            switch segment {
            case .literal(let literal):
                guard part == literal else { return nil }
            case .parameter(let name):
                guard !part.isEmpty, let decoded = PercentDecoding.decode(part) else { return nil }
                parameters[name] = decoded
            }
        }
        return parameters
    }
}

/// The route of the request a connection is reading, matched once: its body limit, its
/// admission and its dispatch all ask for it, and get the same answer without matching again.
/// Used on its connection's event loop only (the state machine's closures capture it there).
final class RouteLookup: @unchecked Sendable {
    private let router: Router
    private var method: HTTPMethod?
    private var path = ""
    private var last = Router.Match.notFound
    /// Matches made (not answered from the last one), for tests.
    private(set) var matched = 0

    init(_ router: Router) {
        self.router = router
    }

    func match(_ method: HTTPMethod, _ path: String) -> Router.Match {
        if method == self.method, path == self.path { return last }
        matched += 1
        last = router.match(method: method, path: path)
        self.method = method
        self.path = path
        return last
    }
}
