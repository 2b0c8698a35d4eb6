import Accounts
import HTTP
import HTTPServer
import JSON

/// Password reset, email verification, undoing a change of address, removing a way in by the link
/// its notice carried, and the user's activity.
struct RecoveryController: Controller {
    let accounts: AccountService

    static func declare(_ routes: inout Routes<Self>) {
        // Counted per address and per email, registered or not, so that a 429 tells nothing.
        routes.open(
            .post, "/users/password-reset", body: Self.resetRequest,
            throttle: Throttling(.passwordResetRequest, [.perEmail { email, _ in email.value }, .perAddress]), use: Self.requestReset)
        // Every attempt per client address (a dead token's too), and per email of a live token's
        // user, with the sign-in's rules; a success gives them back.
        routes.open(
            .post, "/users/password-reset/confirm", .linkToken, body: Self.resetConfirmation,
            throttle: Throttling(
                .passwordResetConfirmation, [.perAddress, .perEmail { confirmation, _ in confirmation.accountEmail }],
                success: .givesBack()),
            hashing: .interactive, use: Self.confirmReset)
        routes.open(.post, "/users/verify-email", .linkToken, use: Self.verify)
        routes.open(.post, "/users/email-change/undo", .linkToken, use: Self.undoEmailChange)
        routes.open(.post, "/users/sign-in-methods/remove", .linkToken, use: Self.removeSignInMethod)
        routes.user(
            .post, "/users/me/verify-email",
            throttle: Throttling(.verificationMail, [.perUser { _, call in !call.signedIn.user.emailVerified }]), use: Self.resendVerification)
        routes.user(.get, "/users/me/activity", use: Self.activity)
    }

    /// The one body of `202` for a reset request, registered address or not.
    static let resetAccepted = #"{"status":"accepted","detail":"If the address belongs to an account, a mail with a reset link is on its way."}"#

    @Sendable func resetRequest(_ call: Call) throws -> EmailAddress {
        try AccountBodies.resetRequest(try JSONBody.object(call.request))
    }

    @Sendable func requestReset(_ call: Call, _ email: EmailAddress) throws -> Response {
        try accounts.recovery.requestPasswordReset(email: email, origin: call.origin)
        var response = Response(status: .accepted, contentType: "application/json", body: Array(RecoveryController.resetAccepted.utf8))
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `{token, newPassword}`, and the account a live token belongs to (its throttle's email).
    struct ResetConfirmation: Sendable {
        let token: String
        let newPassword: String
        let accountEmail: String?
    }

    @Sendable func resetConfirmation(_ call: Call) throws -> ResetConfirmation {
        let (token, newPassword) = try AccountBodies.resetConfirmation(try JSONBody.object(call.request))
        return ResetConfirmation(token: token, newPassword: newPassword, accountEmail: try accounts.recovery.resetTokenOwner(token))
    }

    @Sendable func confirmReset(_ call: Call, _ confirmation: ResetConfirmation) throws -> Response {
        let issued = try accounts.recovery.confirmPasswordReset(
            token: confirmation.token, newPassword: confirmation.newPassword, origin: call.origin)
        // The ways in that remain (those added while the address was unverified went with the reset).
        let (hasPassword, identities, passkeys) = try accounts.signInMethods.signInMethods(of: issued.user.id)
        let mfa = try accounts.secondFactor.status(of: issued.user.id)
        var response = JSONBody.response { writer in
            UserJSON.writeSession(issued, into: &writer) { writer in
                writer.key("signInMethods")
                UserJSON.writeSignInMethods(hasPassword: hasPassword, identities: identities, passkeys: passkeys, mfa: mfa, into: &writer)
            }
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func verify(_ call: Call) throws -> Response {
        let token = try AccountBodies.verification(try JSONBody.object(call.request))
        let user = try accounts.recovery.verifyEmail(token: token, origin: call.origin)
        var response = JSONBody.response { UserJSON.write(user, into: &$0) }
        response.headers.add(name: "ETag", value: user.etag)
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func undoEmailChange(_ call: Call) throws -> Response {
        let token = try AccountBodies.verification(try JSONBody.object(call.request))
        let user = try accounts.recovery.undoEmailChange(token: token, origin: call.origin)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("status")
            writer.string("restored")
            writer.key("email")
            if let email = user.email { writer.string(email) } else { writer.null() }
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `{token}` → `200 {"status": "removed"}`: the way in is gone and every session ended.
    @Sendable func removeSignInMethod(_ call: Call) throws -> Response {
        let token = try AccountBodies.verification(try JSONBody.object(call.request))
        try accounts.signInMethods.removeWayIn(byLink: token, origin: call.origin)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("status")
            writer.string("removed")
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func resendVerification(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let user = signedIn.user
        try accounts.recovery.resendVerification(user: user, origin: call.origin)
        return JSONBody.response(.accepted) { writer in
            writer.beginObject()
            writer.key("status")
            writer.string("accepted")
            writer.key("detail")
            writer.string("A verification mail is on its way to \(user.email ?? "the account's address").")
            writer.endObject()
        }
    }

    @Sendable func activity(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let parameters = try PageParameters(call.request)
        let page = try accounts.recovery.activity(userID: signedIn.user.id, after: parameters.cursor, limit: parameters.limit)
        var response = JSONBody.response { RecoveryController.write(page, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "private, no-cache")
        return response
    }

    /// `{"events": [...], "next"}`, as the user and the administrators read it.
    static func write(_ page: ActivityPage, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("events")
        writer.beginArray()
        for event in page.events {
            writer.beginObject()
            writer.key("id")
            writer.string(event.id.lowercasedText)
            writer.key("type")
            writer.string(event.kind.rawValue)
            writer.key("at")
            writer.string(RFC3339.format(millisecondsSinceEpoch: event.atMicroseconds / 1000))
            writer.key("ipAddress")
            if let address = event.ipAddress { writer.string(address) } else { writer.null() }
            writer.key("userAgent")
            if let agent = event.userAgent { writer.string(agent) } else { writer.null() }
            writer.key("by")
            writer.string(event.byAdministrator ? "administrator" : "user")
            if let method = event.method {
                writer.key("method")
                writer.string(method.rawValue)
            }
            writer.endObject()
        }
        writer.endArray()
        writer.key("next")
        if let next = page.next { writer.string(next.text) } else { writer.null() }
        writer.endObject()
    }
}
