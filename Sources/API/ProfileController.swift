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
    /// Where `GET`, `PUT` and `PATCH /users/me` run: on the event loops' pipelined connections
    /// (they never wait for the hashing pool) or on the worker pool.
    let database: DatabaseRouting

    func register(in routes: inout RouteTable) {
        routes.user(.get, "/users/me", on: database, use: show)
        // A change of address is throttled per user and per target address.
        routes.user(.put, "/users/me", throttles: [.perUser, .perEmail], on: database, use: replace)
        routes.user(.patch, "/users/me", throttles: [.perUser, .perEmail], on: database, use: patch)
        routes.user(.delete, "/users/me", throttles: [.perUser], hashing: .interactive, use: deleteAccount)
        routes.user(.post, "/users/me/password", throttles: [.perUser], hashing: .interactive, use: changePassword)
        routes.user(.get, "/users/schema", use: schema)
    }

    @Sendable func show(
        _ call: Call, _ user: User, _ executor: any QueryExecutor, _ respond: @escaping (() throws -> Response) -> Void
    ) {
        respond {
            if let tags = call.request.headers["If-None-Match"], ETag.matches(tags, user.etag, weak: true) {
                return notModified(user)
            }
            return userResponse(user)
        }
    }

    @Sendable func replace(
        _ call: Call, _ user: User, _ executor: any QueryExecutor, _ respond: @escaping (() throws -> Response) -> Void
    ) {
        writeProfile(call, respond) { [accounts] condition, written in
            let replacement = try AccountBodies.replacement(try JSONBody.object(call.request))
            accounts.replaceProfile(replacement, of: user, condition: condition, origin: call.origin, on: executor, written)
        }
    }

    @Sendable func patch(
        _ call: Call, _ user: User, _ executor: any QueryExecutor, _ respond: @escaping (() throws -> Response) -> Void
    ) {
        writeProfile(call, respond) { [accounts] condition, written in
            let body = try JSONBody.object(call.request, accepting: ["application/merge-patch+json", "application/json"])
            accounts.patchProfile(try AccountBodies.patch(body), of: user, condition: condition, origin: call.origin, on: executor, written)
        }
    }

    /// A profile write: the `If-Match` condition goes to `write`, which reads the body and starts
    /// the service's write; its user is the answer.
    private func writeProfile(
        _ call: Call, _ respond: @escaping (() throws -> Response) -> Void,
        _ write: (WriteCondition, @escaping (Result<User, any Error>) -> Void) throws -> Void
    ) {
        do {
            try write(ETag.condition(call.request.headers["If-Match"])) { written in
                respond { userResponse(try written.get()) }
            }
        } catch {
            respond { throw error }
        }
    }

    @Sendable func changePassword(_ call: Call, _ signedIn: SignedIn) throws -> Response {
        let origin = call.origin
        // While locked, every attempt gets 429, whatever the body says.
        try accounts.checkPasswordLock(userID: signedIn.user.id, origin: origin)
        let (issued, revoked) = try accounts.changePassword(
            try AccountBodies.passwordChange(try JSONBody.object(call.request)),
            session: signedIn.session, origin: origin)
        var response = JSONBody.response { writer in
            UserJSON.writeSession(issued, into: &writer) { writer in
                writer.key("revokedSessions")
                writer.int(revoked)
            }
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func deleteAccount(_ call: Call, _ signedIn: SignedIn) throws -> Response {
        let user = signedIn.user
        // The image rows go in the account's transaction; their files after it commits.
        var files: [UUID] = []
        let origin = call.origin
        try accounts.checkPasswordLock(userID: user.id, origin: origin)
        let password = try AccountBodies.accountDeletion(try JSONBody.object(call.request))
        try accounts.deleteAccount(password: password, userID: user.id, origin: origin) { connection in
            files = try images.deleteAll(userID: user.id, connection)
        }
        images.removeFiles(files)
        return Response(status: .noContent)
    }

    @Sendable func schema(_ call: Call, _ signedIn: SignedIn) throws -> Response {
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
