import Accounts
import FoundationEssentials
import HTTP
import HTTPServer
import Images
import JSON
import Postgres
import PostgresLoop

/// The signed-in user's profile, password, account and the custom field schema.
struct ProfileController: Controller {
    let accounts: AccountService
    let images: ImageService

    static func declare(_ routes: inout Routes<Self>) {
        // `GET`, `PUT` and `PATCH /users/me` never wait for the hashing pool: their statements are
        // pipelined on the event loops' connections.
        routes.user(.get, "/users/me", execution: .pipelined, use: Self.show)
        // A change of address is throttled per user and per target address.
        routes.user(.put, "/users/me", throttles: [.perUser, .perEmail], execution: .pipelined, use: Self.replace)
        routes.user(.patch, "/users/me", throttles: [.perUser, .perEmail], execution: .pipelined, use: Self.patch)
        routes.user(.delete, "/users/me", throttles: [.perUser], hashing: .interactive, use: Self.deleteAccount)
        routes.user(.post, "/users/me/password", throttles: [.perUser], hashing: .interactive, use: Self.changePassword)
        routes.user(.get, "/users/schema", use: Self.schema)
    }

    @Sendable func show(_ call: Call) -> Response {
        let user = call.signedIn.user
        if let tags = call.request.headers["If-None-Match"], ETag.matches(tags, user.etag, weak: true) {
            return notModified(user)
        }
        return userResponse(user)
    }

    @Sendable func replace(_ call: Call) async throws -> Response {
        let condition = ETag.condition(call.request.headers["If-Match"])
        let replacement = try AccountBodies.replacement(try await JSONBody.object(call))
        return userResponse(
            try await accounts.profiles.replaceProfile(
                replacement, of: call.signedIn.user, condition: condition, origin: call.origin, on: call.statements))
    }

    @Sendable func patch(_ call: Call) async throws -> Response {
        let condition = ETag.condition(call.request.headers["If-Match"])
        let body = try await JSONBody.object(call, accepting: ["application/merge-patch+json", "application/json"])
        return userResponse(
            try await accounts.profiles.patchProfile(
                try AccountBodies.patch(body), of: call.signedIn.user, condition: condition, origin: call.origin, on: call.statements))
    }

    @Sendable func changePassword(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let origin = call.origin
        // While locked, every attempt gets 429, whatever the body says.
        try accounts.passwords.checkPasswordLock(userID: signedIn.user.id, origin: origin)
        let (issued, revoked) = try accounts.passwords.changePassword(
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

    @Sendable func deleteAccount(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let user = signedIn.user
        // The image rows go in the account's transaction; their files after it commits.
        var files: [UUID] = []
        let origin = call.origin
        try accounts.passwords.checkPasswordLock(userID: user.id, origin: origin)
        let password = try AccountBodies.accountDeletion(try JSONBody.object(call.request))
        try accounts.passwords.deleteAccount(password: password, userID: user.id, origin: origin) { connection in
            files = try images.deleteAll(userID: user.id, connection)
        }
        images.removeFiles(files)
        return Response(status: .noContent)
    }

    @Sendable func schema(_ call: Call) throws -> Response {
        let types = try accounts.profiles.fieldTypes()
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
