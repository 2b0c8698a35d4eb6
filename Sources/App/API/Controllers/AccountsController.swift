import Accounts
import FoundationEssentials
import HTTP
import HTTPServer

/// Registration, sign-in, sign-out and sessions.
struct AccountsController: Controller {
    let accounts: AccountService

    static func declare(_ routes: inout Routes<Self>) {
        routes.open(.post, "/users", throttles: [.perAddress, .perEmail], hashing: .bulk, use: Self.register)
        routes.open(.post, "/users/signin", throttles: [.perAddress, .perEmail, .perEmailAndAddress], hashing: .interactive, use: Self.signIn)
        routes.user(.post, "/users/signout", use: Self.signOut)
        routes.user(.get, "/users/me/sessions", use: Self.sessions)
        routes.user(.delete, "/users/me/sessions/{id}", use: Self.revokeSession)
    }

    @Sendable func register(_ call: Call) throws -> Response {
        let issued = try accounts.passwordSignIn.register(try AccountBodies.registration(try JSONBody.object(call.request)), origin: call.origin)
        var response = JSONBody.response(.created) { UserJSON.writeSession(issued, into: &$0) }
        response.headers.add(name: "Location", value: "/users/me")
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func signIn(_ call: Call) throws -> Response {
        let issued = try accounts.passwordSignIn.signIn(try AccountBodies.signIn(try JSONBody.object(call.request)), origin: call.origin)
        var response = JSONBody.response { UserJSON.writeSession(issued, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func signOut(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        try accounts.sessions.signOut(
            signedIn.session, scope: try AccountBodies.signOutScope(try JSONBody.object(call.request, optional: true)),
            origin: call.origin)
        return Response(status: .noContent)
    }

    @Sendable func sessions(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let sessions = try accounts.sessions.sessions(of: signedIn.user.id)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("sessions")
            writer.beginArray()
            for session in sessions { UserJSON.writeSessionEntry(session, current: session.id == signedIn.session.id, into: &writer) }
            writer.endArray()
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func revokeSession(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        guard let text = call.parameter("id"), let id = UUID(uuidString: text) else {
            throw AccountsError(.notFound, "No such session.")
        }
        try accounts.sessions.revokeSession(id: id, userID: signedIn.user.id, origin: call.origin)
        return Response(status: .noContent)
    }
}
