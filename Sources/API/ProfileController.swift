import Accounts
import FoundationEssentials
import HTTP
import HTTPServer
import Images
import JSON

/// The signed-in user's profile, password, account and the custom field schema.
struct ProfileController: Sendable {
    let accounts: AccountService
    let images: ImageService
    let authenticator: Authenticator
    /// Where `GET /users/me` runs: the worker pool, or the event loop when the server is set up
    /// for it (it is one indexed query and never waits for the hashing pool).
    var readExecution: Router.Execution = .blocking

    func register(in router: inout Router) {
        router.get("/users/me", execution: readExecution, use: show)
        router.put("/users/me", use: replace)
        router.patch("/users/me", use: patch)
        router.delete("/users/me", use: deleteAccount)
        router.post("/users/me/password", use: changePassword)
        router.get("/users/schema", use: schema)
    }

    @Sendable func show(_ request: Request, _ context: RequestContext) throws -> Response {
        let user = try authenticator.authenticatedUser(request)
        if let tags = request.headers["If-None-Match"], ETag.matches(tags, user.etag, weak: true) {
            return notModified(user)
        }
        return userResponse(user)
    }

    @Sendable func replace(_ request: Request, _ context: RequestContext) throws -> Response {
        let user = try authenticator.authenticatedUser(request)
        let updated = try accounts.replaceProfile(try JSONBody.object(request), user: user, ifMatch: request.headers["If-Match"])
        return userResponse(updated)
    }

    @Sendable func patch(_ request: Request, _ context: RequestContext) throws -> Response {
        let user = try authenticator.authenticatedUser(request)
        let body = try JSONBody.object(request, accepting: ["application/merge-patch+json", "application/json"])
        let updated = try accounts.patchProfile(body, userID: user.id, ifMatch: request.headers["If-Match"])
        return userResponse(updated)
    }

    @Sendable func changePassword(_ request: Request, _ context: RequestContext) throws -> Response {
        let (session, _) = try authenticator.authenticate(request)
        let (issued, revoked) = try accounts.changePassword(try JSONBody.object(request), session: session,
                                                            userAgent: Authenticator.userAgent(request))
        var response = JSONBody.response { writer in
            UserJSON.writeSession(issued, into: &writer) { writer in
                writer.key("revokedSessions")
                writer.int(revoked)
            }
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func deleteAccount(_ request: Request, _ context: RequestContext) throws -> Response {
        let user = try authenticator.authenticatedUser(request)
        // The image rows go in the account's transaction; their files after it commits.
        var files: [UUID] = []
        try accounts.deleteAccount(try JSONBody.object(request), userID: user.id) { connection in
            files = try images.deleteAll(userID: user.id, connection)
        }
        images.removeFiles(files)
        return Response(status: .noContent)
    }

    @Sendable func schema(_ request: Request, _ context: RequestContext) throws -> Response {
        _ = try authenticator.authenticate(request)
        let types = try accounts.fieldTypes()
        return JSONBody.response { writer in
            writer.beginObject()
            writer.key("fields")
            writer.beginObject()
            for (name, type) in types.sorted(by: { $0.key < $1.key }) {
                writer.key(name)
                writer.string(type.rawValue)
            }
            writer.endObject()
            writer.endObject()
        }
    }

    private func userResponse(_ user: User) -> Response {
        var response = JSONBody.response { UserJSON.write(user, into: &$0) }
        response.headers.add(name: "ETag", value: user.etag)
        response.headers.add(name: "Cache-Control", value: "private, no-cache")
        return response
    }

    private func notModified(_ user: User) -> Response {
        var headers = HTTPHeaders()
        headers.add(name: "ETag", value: user.etag)
        headers.add(name: "Cache-Control", value: "private, no-cache")
        return Response(status: .notModified, headers: headers)
    }
}
