import HTTP
@testable import HTTPServer
import TestSupport
import Testing

private func ok(_ tag: String) -> Router.Handler {
    { _, _ in Response(status: .ok, contentType: "text/plain", body: Array(tag.utf8)) }
}

private func router() -> Router {
    var router = Router()
    router.get("/healthz", execution: .loop, use: ok("health"))
    router.get("/users/me", use: ok("me"))
    router.add(.put, "/users/me", ok("put-me"))
    router.add(.post, "/users", bodyLimit: .bytes(10), ok("create"))
    router.get("/users/me/images/{id}", use: ok("image"))
    router.add(.delete, "/users/me/images/{id}", ok("delete-image"))
    router.get("/a/{x}/b/{y}", use: ok("two"))
    router.add(.post, "/only-post", ok("only-post"))
    router.get("/", use: ok("root"))
    return router
}

/// The route and parameters of a `.found`, or a recorded failure.
private func found(_ match: Router.Match, sourceLocation: SourceLocation = #_sourceLocation) -> (route: Router.Route, parameters: [String: String])? {
    guard case .found(let route, let parameters) = match else {
        Issue.record("expected .found, got \(match)", sourceLocation: sourceLocation)
        return nil
    }
    return (route, parameters)
}

private func isNotFound(_ match: Router.Match) -> Bool {
    if case .notFound = match { true } else { false }
}

private func allowed(_ match: Router.Match) -> [String]? {
    if case .methodNotAllowed(let allow) = match { allow.map(\.rawValue) } else { nil }
}

/// Runs the handler of a found route and returns its body as text.
private func body(of match: Router.Match) async throws -> String? {
    guard case .found(let route, let parameters) = match else { return nil }
    let response = try await route.handler(
        Request(head: RequestHead(method: route.method, target: "/")),
        RequestContext(requestID: "t", parameters: parameters))
    return String(decoding: response.body, as: UTF8.self)
}

@Suite(.testThreads) struct RouterTests {
    @Test func staticRoutes() async throws {
        let r = router()
        #expect(try await body(of: r.match(method: .get, path: "/healthz")) == "health")
        #expect(try await body(of: r.match(method: .get, path: "/users/me")) == "me")
        #expect(try await body(of: r.match(method: .put, path: "/users/me")) == "put-me")
        #expect(try await body(of: r.match(method: .get, path: "/")) == "root")
        #expect(found(r.match(method: .get, path: "/healthz"))?.route.execution == .loop)
        #expect(found(r.match(method: .get, path: "/users/me"))?.route.execution == .workers)
        #expect(found(r.match(method: .post, path: "/users"))?.route.bodyLimit?.forHead(RequestHead(method: .post, target: "/users")) == 10)
        #expect(found(r.match(method: .get, path: "/users/me"))?.route.pattern == "/users/me")
    }

    /// A connection's request is matched once: its body limit, its admission and its dispatch
    /// get the first answer; the next request on the connection is matched anew.
    @Test func aConnectionMatchesEachRequestOnce() async throws {
        let lookup = RouteLookup(router())
        for _ in 0..<4 { #expect(found(lookup.match(.get, "/users/me/images/abc"))?.parameters == ["id": "abc"]) }
        #expect(lookup.matched == 1)
        #expect(try await body(of: lookup.match(.delete, "/users/me/images/abc")) == "delete-image")
        #expect(try await body(of: lookup.match(.get, "/users/me")) == "me")
        #expect(lookup.matched == 3)
    }

    @Test func parameterizedRoutes() async throws {
        let r = router()
        let image = found(r.match(method: .get, path: "/users/me/images/abc-123"))
        #expect(image?.parameters == ["id": "abc-123"])
        #expect(image?.route.pattern == "/users/me/images/{id}")
        #expect(try await body(of: r.match(method: .delete, path: "/users/me/images/abc")) == "delete-image")
        #expect(found(r.match(method: .get, path: "/a/1/b/2"))?.parameters == ["x": "1", "y": "2"])
        #expect(isNotFound(r.match(method: .get, path: "/a/1/c/2")))
        #expect(isNotFound(r.match(method: .get, path: "/users/me/images")))
        #expect(isNotFound(r.match(method: .get, path: "/users/me/images/a/b")))
    }

    @Test func parametersArePercentDecoded() {
        let r = router()
        #expect(found(r.match(method: .get, path: "/users/me/images/caf%C3%A9"))?.parameters == ["id": "café"])
        #expect(found(r.match(method: .get, path: "/users/me/images/a%2Fb%20c"))?.parameters == ["id": "a/b c"])
        #expect(found(r.match(method: .get, path: "/users/me/images/%e2%82%ac"))?.parameters == ["id": "€"])
        // A plus sign is not a space in a path.
        #expect(found(r.match(method: .get, path: "/users/me/images/a+b"))?.parameters == ["id": "a+b"])
    }

    @Test(arguments: ["%", "%4", "a%G1", "%zz", "x%2", "%FF", "%C3", "%C3%28", "%ED%A0%80", "%C0%AF"])
    func malformedOrNonUTF8ParametersDoNotMatch(_ raw: String) {
        #expect(isNotFound(router().match(method: .get, path: "/users/me/images/\(raw)")))
        #expect(PercentDecoding.decode(Substring(raw)) == nil)
    }

    @Test func emptyParameterDoesNotMatch() {
        #expect(isNotFound(router().match(method: .get, path: "/users/me/images/")))
        #expect(isNotFound(router().match(method: .get, path: "/a//b/2")))
    }

    @Test func unknownPathIs404() {
        let r = router()
        #expect(isNotFound(r.match(method: .get, path: "/nope")))
        #expect(isNotFound(r.match(method: .get, path: "/healthz/extra")))
        #expect(isNotFound(r.match(method: .get, path: "/HEALTHZ")))
        #expect(isNotFound(r.match(method: .get, path: "")))
        #expect(isNotFound(r.match(method: .options, path: "*")))
    }

    @Test func trailingSlashIs404() {
        let r = router()
        #expect(isNotFound(r.match(method: .get, path: "/healthz/")))
        #expect(isNotFound(r.match(method: .get, path: "/users/me/")))
        #expect(isNotFound(r.match(method: .get, path: "/a/1/b/2/")))
    }

    @Test func wrongMethodIs405WithAllow() {
        let r = router()
        #expect(allowed(r.match(method: .post, path: "/healthz")) == ["GET", "HEAD"])
        #expect(Set(allowed(r.match(method: .delete, path: "/users/me")) ?? []) == ["GET", "PUT", "HEAD"])
        #expect(allowed(r.match(method: .get, path: "/only-post")) == ["POST"])
        // No GET, so HEAD is not implied.
        #expect(allowed(r.match(method: .head, path: "/only-post")) == ["POST"])
        #expect(Set(allowed(r.match(method: .put, path: "/users/me/images/x")) ?? []) == ["GET", "DELETE", "HEAD"])
        #expect(allowed(r.match(method: .options, path: "/healthz")) == ["GET", "HEAD"])
    }

    /// A literal path is its literal routes' alone, even where a parameterized route of the same
    /// shape would bind it: the literal's methods are all it allows.
    @Test func aLiteralPathIsNotAParameter() async throws {
        var r = router()
        r.add(.post, "/users/me/images/upload", ok("upload"))
        #expect(try await body(of: r.match(method: .post, path: "/users/me/images/upload")) == "upload")
        #expect(allowed(r.match(method: .get, path: "/users/me/images/upload")) == ["POST"])
        #expect(allowed(r.match(method: .delete, path: "/users/me/images/upload")) == ["POST"])
        #expect(try await body(of: r.match(method: .get, path: "/users/me/images/other")) == "image")
    }

    @Test func unknownMethodIs501() {
        let r = router()
        guard case .notImplemented = r.match(method: HTTPMethod("BREW"), path: "/healthz") else {
            Issue.record("expected .notImplemented")
            return
        }
        // Methods compare case-sensitively: `get` is not GET.
        guard case .notImplemented = r.match(method: HTTPMethod("get"), path: "/healthz") else {
            Issue.record("expected .notImplemented")
            return
        }
    }

    @Test func headFallsBackToGet() async throws {
        let r = router()
        let head = found(r.match(method: .head, path: "/healthz"))
        #expect(head?.route.method == .get)
        let image = found(r.match(method: .head, path: "/users/me/images/x%20y"))
        #expect(image?.route.method == .get)
        #expect(image?.parameters == ["id": "x y"])
    }

    @Test func explicitHeadRouteWinsOverGet() async throws {
        var r = router()
        r.add(.head, "/healthz", ok("head"))
        #expect(try await body(of: r.match(method: .head, path: "/healthz")) == "head")
        #expect(try await body(of: r.match(method: .get, path: "/healthz")) == "health")
    }

    @Test func routesListsEveryRoute() {
        #expect(router().routes.count == 9)
    }

    @Test func percentDecode() {
        #expect(PercentDecoding.decode("plain") == "plain")
        #expect(PercentDecoding.decode("%41%62") == "Ab")
        #expect(PercentDecoding.decode("") == "")
    }
}
