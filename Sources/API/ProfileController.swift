import Accounts
import FoundationEssentials
import HTTP
import HTTPServer
import Images
import JSON
import Postgres

/// The signed-in user's profile, password, account and the custom field schema.
struct ProfileController: Sendable {
    let accounts: AccountService
    let images: ImageService
    let authenticator: Authenticator
    /// When set, `GET`, `PUT` and `PATCH /users/me` are answered on the event loop through its
    /// pipelined connection (they never wait for the hashing pool), with the worker pool as the
    /// fallback.
    let pipelines: Pipelines?

    func register(in router: inout Router) {
        if let pipelines {
            router.add(.get, "/users/me", show, asynchronous: { showPipelined($0, $1, $2, pipelines) })
            router.add(.put, "/users/me", admission: authenticator.admission, replace,
                       asynchronous: { replacePipelined($0, $1, $2, pipelines) })
            router.add(.patch, "/users/me", admission: authenticator.admission, patch,
                       asynchronous: { patchPipelined($0, $1, $2, pipelines) })
        } else {
            router.get("/users/me", use: show)
            router.put("/users/me", admission: authenticator.admission, use: replace)
            router.patch("/users/me", admission: authenticator.admission, use: patch)
        }
        router.delete("/users/me", admission: authenticator.admission, use: deleteAccount)
        router.post("/users/me/password", admission: authenticator.admission, use: changePassword)
        router.get("/users/schema", use: schema)
    }

    @Sendable func show(_ request: Request, _ context: RequestContext) throws -> Response {
        showResponse(request, user: try authenticator.authenticatedUser(request))
    }

    /// `show` on the event loop: the session lookup goes out on the loop's pipelined connection.
    /// Without one, or when it fails, the worker pool runs `show` (a read, safe to run again).
    func showPipelined(_ request: Request, _ context: RequestContext, _ responder: Responder, _ pipelines: Pipelines) {
        lookUpSession(request, responder, pipelines) { [accounts] rows in
            responder.respond { showResponse(request, user: try accounts.authenticatedUser(lookupRows: rows)) }
        }
    }

    /// `replace` on the event loop: the session lookup, then (when the field types are all known)
    /// the one conditional `UPDATE`, committed with the other writes of the loop's wake-up.
    func replacePipelined(_ request: Request, _ context: RequestContext, _ responder: Responder, _ pipelines: Pipelines) {
        writeProfile(request, responder, pipelines, retryWhenNoRow: false) { [accounts] user in
            try accounts.profileReplacement(try JSONBody.object(request), user: user, ifMatch: request.headers["If-Match"])
        }
    }

    /// `patch` on the event loop: the patch is merged into the user the session lookup returned and
    /// written on the condition that it is still that version; if it is not, the workers'
    /// transaction merges it into the new one.
    func patchPipelined(_ request: Request, _ context: RequestContext, _ responder: Responder, _ pipelines: Pipelines) {
        writeProfile(request, responder, pipelines, retryWhenNoRow: true) { [accounts] user in
            let body = try JSONBody.object(request, accepting: ["application/merge-patch+json", "application/json"])
            return try accounts.profilePatch(body, user: user, ifMatch: request.headers["If-Match"])
        }
    }

    /// A profile write on the event loop: the session lookup, then `plan`'s statement for the user
    /// it found (nil: the request needs the workers' transaction) in the loop's next batch of
    /// writes, answered with the user it returns. No row returned is a stale `If-Match`, or, with
    /// `retryWhenNoRow`, a user that changed since it was read: the workers run the request again.
    /// Bodies over 64 KiB are parsed on the workers, not on the loop.
    private func writeProfile(_ request: Request, _ responder: Responder, _ pipelines: Pipelines, retryWhenNoRow: Bool,
                              _ plan: @escaping (User) throws -> (statement: PostgresStatement, binds: PostgresBindings)?) {
        guard request.body.count <= 64 * 1024 else { return responder.fallBack() }
        lookUpSession(request, responder, pipelines) { [accounts] rows in
            let user: User
            let write: (statement: PostgresStatement, binds: PostgresBindings)?
            do {
                user = try accounts.authenticatedUser(lookupRows: rows)
                write = try plan(user)
            } catch {
                return responder.respond { throw error }
            }
            guard let write else { return responder.fallBack() }
            pipelines.write(write.statement, write.binds, lockOrder: user.id.lowercasedText, for: responder) { outcome in
                if retryWhenNoRow, case .success(let rows) = outcome, rows.first == nil { return responder.fallBack() }
                responder.respond { userResponse(try accounts.replacedProfile(outcome)) }
            }
        }
    }

    /// Sends the session lookup of the request's token on the loop's pipeline and hands its rows
    /// to `answer`; a missing or malformed token is answered at once, without the database.
    private func lookUpSession(_ request: Request, _ responder: Responder, _ pipelines: Pipelines,
                               _ answer: @escaping (PostgresRows) -> Void) {
        let lookup: (statement: PostgresStatement, binds: PostgresBindings)
        do {
            lookup = try accounts.sessionLookup(token: try authenticator.token(request))
        } catch {
            return responder.respond { throw error }
        }
        pipelines.query(lookup.statement, lookup.binds, for: responder, answer)
    }

    private func showResponse(_ request: Request, user: User) -> Response {
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
                                                            origin: authenticator.origin(request, context))
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
        try accounts.deleteAccount(try JSONBody.object(request), userID: user.id, origin: authenticator.origin(request, context)) { connection in
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
