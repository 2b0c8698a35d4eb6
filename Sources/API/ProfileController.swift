import Accounts
import FoundationEssentials
import HTTP
import HTTPServer
import Images
import JSON
import Postgres
import PostgresLoop

/// The signed-in user's profile, password, account and the custom field schema.
struct ProfileController: Sendable {
    let accounts: AccountService
    let images: ImageService
    let authenticator: Authenticator
    /// Where `GET`, `PUT` and `PATCH /users/me` run: on the event loops' pipelined connections
    /// (they never wait for the hashing pool) or on the worker pool.
    let database: DatabaseRouting

    func register(in router: inout Router) {
        router.add(.get, "/users/me", on: database, show)
        router.add(.put, "/users/me", admission: authenticator.admission, on: database, replace)
        router.add(.patch, "/users/me", admission: authenticator.admission, on: database, patch)
        router.delete("/users/me", admission: authenticator.admission, use: deleteAccount)
        router.post("/users/me/password", admission: authenticator.admission, use: changePassword)
        router.get("/users/schema", use: schema)
    }

    @Sendable func show(
        _ request: Request, _ context: RequestContext, _ executor: any QueryExecutor,
        _ respond: @escaping (() throws -> Response) -> Void
    ) {
        authenticator.user(request, on: executor) { result in
            respond {
                let user = try result.get()
                if let tags = request.headers["If-None-Match"], ETag.matches(tags, user.etag, weak: true) {
                    return notModified(user)
                }
                return userResponse(user)
            }
        }
    }

    @Sendable func replace(
        _ request: Request, _ context: RequestContext, _ executor: any QueryExecutor,
        _ respond: @escaping (() throws -> Response) -> Void
    ) {
        writeProfile(request, executor, respond) { [accounts, authenticator] user, condition, written in
            let replacement = try AccountBodies.replacement(try JSONBody.object(request))
            accounts.replaceProfile(
                replacement, of: user, condition: condition, origin: authenticator.origin(request, context), on: executor, written)
        }
    }

    @Sendable func patch(
        _ request: Request, _ context: RequestContext, _ executor: any QueryExecutor,
        _ respond: @escaping (() throws -> Response) -> Void
    ) {
        writeProfile(request, executor, respond) { [accounts, authenticator] user, condition, written in
            let body = try JSONBody.object(request, accepting: ["application/merge-patch+json", "application/json"])
            accounts.patchProfile(
                try AccountBodies.patch(body), of: user, condition: condition, origin: authenticator.origin(request, context),
                on: executor, written)
        }
    }

    /// A profile write: the signed-in user and the `If-Match` condition go to `write`, which reads
    /// the body and starts the service's write; its user is the answer.
    private func writeProfile(
        _ request: Request, _ executor: any QueryExecutor, _ respond: @escaping (() throws -> Response) -> Void,
        _ write: @escaping (User, WriteCondition, @escaping (Result<User, any Error>) -> Void) throws -> Void
    ) {
        authenticator.user(request, on: executor) { result in
            do {
                try write(try result.get(), ETag.condition(request.headers["If-Match"])) { written in
                    respond { userResponse(try written.get()) }
                }
            } catch {
                respond { throw error }
            }
        }
    }

    @Sendable func changePassword(_ request: Request, _ context: RequestContext) throws -> Response {
        let (session, _) = try authenticator.authenticate(request)
        let origin = authenticator.origin(request, context)
        // While locked, every attempt gets 429, whatever the body says.
        try accounts.checkPasswordLock(userID: session.userID, origin: origin)
        let (issued, revoked) = try accounts.changePassword(
            try AccountBodies.passwordChange(try JSONBody.object(request)),
            session: session, origin: origin)
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
        let origin = authenticator.origin(request, context)
        try accounts.checkPasswordLock(userID: user.id, origin: origin)
        let password = try AccountBodies.accountDeletion(try JSONBody.object(request))
        try accounts.deleteAccount(password: password, userID: user.id, origin: origin) { connection in
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
