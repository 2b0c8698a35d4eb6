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
        // A change of address (each mails the new one) is counted per user and per target address.
        routes.user(
            .put, "/users/me", body: Self.replacement, throttle: Self.addressChange { $0.email }, execution: .pipelined, use: Self.replace)
        routes.user(.patch, "/users/me", body: Self.patchBody, throttle: Self.addressChange { $0.email }, execution: .pipelined, use: Self.patch)
        // Wrong current passwords lock the user's password checks; a right one clears the count.
        routes.user(
            .delete, "/users/me", body: Self.currentPassword,
            throttle: Throttling(.passwordCheck, [.perUser], success: .givesBack(clearing: .perUser)),
            hashing: .interactive, use: Self.deleteAccount)
        routes.user(
            .post, "/users/me/password", body: Self.passwordChange,
            throttle: Throttling(
                .passwordCheck, [.perUser, .perUser(counting: .passwordChange)], success: .givesBack(clearing: .perUser)),
            hashing: .interactive, use: Self.changePassword)
        routes.user(.get, "/users/schema", use: Self.schema)
    }

    @Sendable func show(_ call: Call) -> Response {
        let user = call.signedIn.user
        if let tags = call.request.headers["If-None-Match"], ETag.matches(tags, user.etag, weak: true) {
            return notModified(user)
        }
        return userResponse(user)
    }

    /// The throttle of a profile write: counted when its `email` is another address than the
    /// signed-in user's, per user and per that address.
    private static func addressChange<Body>(_ email: @escaping @Sendable (Body) -> EmailAddress?) -> Throttling<Body> {
        Throttling(
            .emailChange,
            [.perUser { body, call in changesAddress(email(body), call) }, .perEmail { body, call in newAddress(email(body), call) }])
    }

    /// Whether a profile's `email` is another address than the signed-in user's.
    private static func changesAddress(_ email: EmailAddress?, _ call: Call) -> Bool {
        guard let email else { return false }
        return email.normalized != call.signedIn.user.email.map(EmailAddress.normalized)
    }

    private static func newAddress(_ email: EmailAddress?, _ call: Call) -> String? {
        changesAddress(email, call) ? email?.value : nil
    }

    @Sendable func replacement(_ call: Call) async throws -> ProfileReplacement {
        try AccountBodies.replacement(try await JSONBody.object(call))
    }

    @Sendable func replace(_ call: Call, _ replacement: ProfileReplacement) async throws -> Response {
        let condition = ETag.condition(call.request.headers["If-Match"])
        return userResponse(
            try await accounts.profiles.replaceProfile(
                replacement, of: call.signedIn.user, condition: condition, origin: call.origin, on: call.statements))
    }

    @Sendable func patchBody(_ call: Call) async throws -> ProfilePatch {
        try AccountBodies.patch(try await JSONBody.object(call, accepting: ["application/merge-patch+json", "application/json"]))
    }

    @Sendable func patch(_ call: Call, _ patch: ProfilePatch) async throws -> Response {
        let condition = ETag.condition(call.request.headers["If-Match"])
        return userResponse(
            try await accounts.profiles.patchProfile(patch, of: call.signedIn.user, condition: condition, origin: call.origin, on: call.statements))
    }

    @Sendable func passwordChange(_ call: Call) throws -> PasswordChange {
        try AccountBodies.passwordChange(try JSONBody.object(call.request))
    }

    @Sendable func changePassword(_ call: Call, _ change: PasswordChange) throws -> Response {
        let (issued, revoked) = try accounts.passwords.changePassword(
            change, user: call.signedIn.user, session: call.signedIn.session, origin: call.origin)
        var response = JSONBody.response { writer in
            UserJSON.writeSession(issued, into: &writer) { writer in
                writer.key("revokedSessions")
                writer.int(revoked)
            }
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func currentPassword(_ call: Call) throws -> String? {
        try AccountBodies.accountDeletion(try JSONBody.object(call.request, optional: true))
    }

    @Sendable func deleteAccount(_ call: Call, _ password: String?) throws -> Response {
        let user = call.signedIn.user
        // The image rows go in the account's transaction; their files after it commits.
        var files: [UUID] = []
        try accounts.passwords.deleteAccount(password: password, user: user, session: call.signedIn.session, origin: call.origin) {
            connection in
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
