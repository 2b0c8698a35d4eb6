import Accounts
import FoundationEssentials
import HTTP
import HTTPServer

/// Registration, sign-in, sign-out and sessions.
struct AccountsController: Sendable {
    let accounts: AccountService
    let authenticator: Authenticator

    func register(in router: inout Router) {
        router.post("/users", use: register)
        router.post("/users/signin", use: signIn)
        router.post("/users/signout", admission: authenticator.admission, use: signOut)
        router.get("/users/me/sessions", use: sessions)
        router.delete("/users/me/sessions/{id}", use: revokeSession)
    }

    @Sendable func register(_ request: Request, _ context: RequestContext) throws -> Response {
        let issued = try accounts.register(
            try AccountBodies.registration(try JSONBody.object(request)), origin: authenticator.origin(request, context))
        var response = JSONBody.response(.created) { UserJSON.writeSession(issued, into: &$0) }
        response.headers.add(name: "Location", value: "/users/me")
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func signIn(_ request: Request, _ context: RequestContext) throws -> Response {
        let issued = try accounts.signIn(try AccountBodies.signIn(try JSONBody.object(request)), origin: authenticator.origin(request, context))
        var response = JSONBody.response { UserJSON.writeSession(issued, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func signOut(_ request: Request, _ context: RequestContext) throws -> Response {
        let (session, _) = try authenticator.authenticate(request)
        try accounts.signOut(
            session, scope: try AccountBodies.signOutScope(try JSONBody.object(request, optional: true)),
            origin: authenticator.origin(request, context))
        return Response(status: .noContent)
    }

    @Sendable func sessions(_ request: Request, _ context: RequestContext) throws -> Response {
        let (current, user) = try authenticator.authenticate(request)
        let sessions = try accounts.sessions(of: user.id)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("sessions")
            writer.beginArray()
            for session in sessions { UserJSON.writeSessionEntry(session, current: session.id == current.id, into: &writer) }
            writer.endArray()
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func revokeSession(_ request: Request, _ context: RequestContext) throws -> Response {
        let user = try authenticator.authenticatedUser(request)
        guard let text = context.parameters["id"], let id = UUID(uuidString: text) else {
            throw AccountsError(.notFound, "No such session.")
        }
        try accounts.revokeSession(id: id, userID: user.id, origin: authenticator.origin(request, context))
        return Response(status: .noContent)
    }
}
