import Accounts
import FoundationEssentials
import HTTP
import HTTPServer

/// Registration, sign-in, sign-out and sessions.
struct AccountsController: Controller {
    let accounts: AccountService

    static func declare(_ routes: inout Routes<Self>) {
        // Per address, and per email with the sign-in's rule: many addresses racing to register
        // one address each hash once at most up to that limit before the first one commits.
        routes.open(
            .post, "/users", body: Self.registration,
            throttle: Throttling(.registration, [.perAddress, .perEmail { registration, _ in registration.email.value }]), hashing: .bulk,
            use: Self.register)
        // Guesses are counted before their hash.
        routes.open(
            .post, "/users/signin", body: Self.signInAttempt, throttle: .passwordGuesses(.signIn), hashing: .interactive, use: Self.signIn)
        // Guests: per client address (a flood from one address meets its own limit, then `429`).
        routes.open(
            .post, "/users/guest", body: Self.guestStart, throttle: Throttling(.guestCreation, [.perAddress]), use: Self.createGuest)
        // A code by mail: counted per address and per email, registered or not (a 429 tells nothing).
        routes.open(
            .post, "/users/signin/email-code", body: Self.codeRequest,
            throttle: Throttling(.emailCodeRequest, [.perAddress, .perEmail { email, _ in email.value }]), use: Self.requestCode)
        // Guesses of a code: as a password's, per email from one address (the owner rule), per
        // email and per address; a success gives its attempt back.
        routes.open(
            .post, "/users/signin/email-code/verify", body: Self.codeAttempt,
            throttle: Throttling(
                .emailCodeSignIn, [.perEmailAndAddress(\.email.value), .perEmail { attempt, _ in attempt.email.value }, .perAddress],
                success: .givesBack(clearing: .perEmailAndAddress)),
            use: Self.signInWithCode)
        routes.user(.post, "/users/signout", use: Self.signOut)
        routes.user(.get, "/users/me/sessions", use: Self.sessions)
        routes.user(.get, "/users/me/sign-in-methods", use: Self.signInMethods)
        routes.user(.delete, "/users/me/sessions/{id}", use: Self.revokeSession)
    }

    @Sendable func registration(_ call: Call) async throws -> Registration {
        try AccountBodies.registration(try await JSONBody.object(call))
    }

    @Sendable func register(_ call: Call, _ registration: Registration) throws -> Response {
        Self.created(try accounts.passwordSignIn.register(registration, origin: call.origin))
    }

    /// `201` with the new account's first session.
    private static func created(_ issued: IssuedSession) -> Response {
        var response = JSONBody.response(.created) { UserJSON.writeSession(issued, into: &$0) }
        response.headers.add(name: "Location", value: "/users/me")
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func signInAttempt(_ call: Call) async throws -> SignInAttempt {
        try AccountBodies.signIn(try await JSONBody.object(call))
    }

    @Sendable func signIn(_ call: Call, _ attempt: SignInAttempt) throws -> Response {
        let issued = try accounts.passwordSignIn.signIn(attempt, origin: call.origin)
        var response = JSONBody.response { UserJSON.writeSession(issued, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func guestStart(_ call: Call) async throws -> GuestStart {
        try AccountBodies.guest(try await JSONBody.object(call, optional: true))
    }

    /// `201` with a session; the user has `isGuest: true` and no address.
    @Sendable func createGuest(_ call: Call, _ start: GuestStart) throws -> Response {
        Self.created(try accounts.guests.create(firstname: start.firstname, lastname: start.lastname, data: start.data, origin: call.origin))
    }

    @Sendable func codeRequest(_ call: Call) async throws -> EmailAddress {
        try AccountBodies.resetRequest(try await JSONBody.object(call))
    }

    /// `202`, the same for any address.
    @Sendable func requestCode(_ call: Call, _ email: EmailAddress) throws -> Response {
        try accounts.emailCodes.requestSignInCode(email: email)
        return JSONBody.response(.accepted) { writer in
            writer.beginObject()
            writer.key("status"); writer.string("accepted")
            writer.key("detail"); writer.string("If the address may sign in, a code is on its way to it.")
            writer.endObject()
        }
    }

    @Sendable func codeAttempt(_ call: Call) async throws -> EmailCodeAttempt {
        try AccountBodies.emailCodeAttempt(try await JSONBody.object(call))
    }

    @Sendable func signInWithCode(_ call: Call, _ attempt: EmailCodeAttempt) throws -> Response {
        let issued = try accounts.emailCodes.signIn(email: attempt.email, code: attempt.code, origin: call.origin)
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

    /// `{"password", "passkeys", "identities"}`: every way into the account.
    @Sendable func signInMethods(_ call: Call) throws -> Response {
        let (hasPassword, identities, passkeys) = try accounts.signInMethods.signInMethods(of: call.signedIn.user.id)
        let mfa = try accounts.secondFactor.status(of: call.signedIn.user.id)
        var response = JSONBody.response { writer in
            UserJSON.writeSignInMethods(hasPassword: hasPassword, identities: identities, passkeys: passkeys, mfa: mfa, into: &writer)
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
