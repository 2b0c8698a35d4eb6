import HTTP

/// The route table: method and path pattern to handler, with path parameters such as `{id}`.
///
/// Every route has one handler shape: the request and its context in, the response out. The
/// server runs it once, as a task on the executor the route names (its event loop, or the
/// worker pool), and answers with what it returns or the problem its error maps to.
public struct Router: Sendable {
    public typealias Handler = @Sendable (Request, RequestContext) async throws -> Response
    /// Runs from the head alone, before a body over `ServerConfiguration.admissionThreshold` is
    /// read (authentication: an upload with a bad token is refused before its megabytes arrive).
    /// What it returns reaches the handler as `RequestContext.admitted`; what it throws is the
    /// answer instead (the connection then closes: the body stays unread).
    public typealias Admission = @Sendable (RequestHead, RequestContext) async throws -> (any Sendable)?

    /// Where a route's task runs.
    public enum Execution: String, Sendable {
        /// On the event loop the request arrived on: for handlers that never block, whose waits
        /// are suspensions (a pipelined statement, a hop to the workers), resumed on the loop.
        case loop
        /// On the worker pool: handlers that block (a pooled connection, the hashing pool, a file).
        case workers
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
        public let execution: Execution
        /// The body this route accepts; nil means the server's default.
        public let bodyLimit: BodyLimit?
        /// Run before a large body is read; nil reads any body.
        public let admission: Admission?
        /// What the layers above declared with the route (their policies), kept for them to list.
        public let declaration: (any Sendable)?
        /// Position in the table, for cheap metric keys.
        let index: Int
        let segments: [Segment]
        let handler: Handler
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
        _ method: HTTPMethod, _ pattern: String, execution: Execution = .workers, bodyLimit: BodyLimit? = nil,
        admission: Admission? = nil, declaration: (any Sendable)? = nil, _ handler: @escaping Handler
    ) {
        let segments = Router.segments(of: pattern).map { part -> Segment in
            part.hasPrefix("{") && part.hasSuffix("}") ? .parameter(String(part.dropFirst().dropLast())) : .literal(String(part))
        }
        let route = Route(
            method: method, pattern: pattern, execution: execution, bodyLimit: bodyLimit, admission: admission,
            declaration: declaration, index: routeCount, segments: segments, handler: handler)
        routeCount += 1
        if segments.contains(where: { if case .parameter = $0 { true } else { false } }) {
            parameterizedRoutes.append(route)
        } else {
            staticRoutes[pattern, default: []].append(route)
        }
    }

    /// A route that anyone may call (pages, health, the document).
    public mutating func get(_ pattern: String, execution: Execution = .workers, use handler: @escaping Handler) {
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
