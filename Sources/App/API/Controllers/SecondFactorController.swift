import Accounts
import FoundationEssentials
import HTTP
import HTTPServer
import JSON

/// A user's second factor (`/users/me/mfa…`): TOTP enrolment and its confirmation, recovery
/// codes, turning it off, and the sign-in's second step (`POST /users/signin/mfa`).
struct SecondFactorController: Controller {
    let accounts: AccountService

    static func declare(_ routes: inout Routes<Self>) {
        routes.user(.get, "/users/me/mfa", use: Self.status)
        // Changes of a way in: a verified address, a recent authentication (with both factors
        // while one is on), 10 an hour per user, wrong codes included.
        let change: Set<RoutePolicy.Requirement> = [.verifiedAddress, .recentAuthentication]
        routes.user(
            .post, "/users/me/mfa/totp", requires: change, throttle: Throttling(.signInMethodChange, [.perUser]), use: Self.startEnrolment)
        routes.user(
            .post, "/users/me/mfa/totp/confirm", requires: change, body: Self.code,
            throttle: Throttling(.signInMethodChange, [.perUser]), use: Self.confirm)
        routes.user(.delete, "/users/me/mfa/totp", requires: change, throttle: Throttling(.signInMethodChange, [.perUser]), use: Self.disable)
        routes.user(
            .post, "/users/me/mfa/recovery-codes", requires: change, throttle: Throttling(.signInMethodChange, [.perUser]),
            use: Self.regenerate)
        // Wrong codes count per client address and per user (whose other ways in they never
        // touch); a success gives its attempt back.
        routes.open(
            .post, "/users/signin/mfa", body: Self.finishing,
            throttle: Throttling(.secondFactorCode, [.perAddress, .perUser(of: { finishing, _ in finishing.userID })], success: .givesBack()),
            use: Self.finish)
    }

    @Sendable func status(_ call: Call) throws -> Response {
        let status = try accounts.secondFactor.status(of: call.signedIn.user.id)
        var response = JSONBody.response { Self.write(status, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `{"totp": {"enabled"}, "recoveryCodesLeft"}`.
    static func write(_ status: SecondFactor.Status, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("totp")
        writer.beginObject()
        writer.key("enabled"); writer.bool(status.enabled)
        writer.endObject()
        writer.key("recoveryCodesLeft"); writer.int(status.recoveryCodesLeft)
        writer.endObject()
    }

    @Sendable func startEnrolment(_ call: Call) throws -> Response {
        Self.enrolment(try accounts.secondFactor.startEnrolment(user: call.signedIn.user))
    }

    /// `200 {"secret", "otpauthUri", "qrCodeSvg"}`, a user's or an administrator's.
    static func enrolment(_ enrolment: SecondFactor.Enrolment) -> Response {
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("secret"); writer.string(enrolment.secret)
            writer.key("otpauthUri"); writer.string(enrolment.uri)
            writer.key("qrCodeSvg"); writer.string(enrolment.qrCodeSVG)
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `{"code"}`.
    @Sendable func code(_ call: Call) throws -> String {
        let body = RequestBody(object: try JSONBody.object(call.request))
        try body.checkKeys(allowed: ["code"])
        return try body.string("code", required: true)!
    }

    @Sendable func confirm(_ call: Call, _ code: String) throws -> Response {
        let signedIn = call.signedIn
        let codes = try accounts.secondFactor.confirmEnrolment(user: signedIn.user, session: signedIn.session, code: code, origin: call.origin)
        return Self.recoveryCodes(codes)
    }

    @Sendable func disable(_ call: Call) throws -> Response {
        try accounts.secondFactor.disable(userID: call.signedIn.user.id, origin: call.origin)
        return Response(status: .noContent)
    }

    @Sendable func regenerate(_ call: Call) throws -> Response {
        Self.recoveryCodes(try accounts.secondFactor.regenerateRecoveryCodes(user: call.signedIn.user, origin: call.origin))
    }

    /// `200 {"recoveryCodes": [...]}`, shown this once.
    static func recoveryCodes(_ codes: [String]) -> Response {
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("recoveryCodes")
            writer.beginArray()
            for code in codes { writer.string(code) }
            writer.endArray()
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `{mfaToken, code}`, and the user of a live token (the throttle's per-user counter).
    struct Finishing: Sendable {
        let token: String
        let code: String
        let userID: UUID?
    }

    @Sendable func finishing(_ call: Call) throws -> Finishing {
        let body = RequestBody(object: try JSONBody.object(call.request))
        try body.checkKeys(allowed: ["mfaToken", "code"])
        let token = try body.string("mfaToken", required: true)!
        return Finishing(token: token, code: try body.string("code", required: true)!, userID: try accounts.secondFactor.challengeUser(token))
    }

    @Sendable func finish(_ call: Call, _ finishing: Finishing) throws -> Response {
        let issued = try accounts.secondFactor.finishSignIn(token: finishing.token, code: finishing.code, origin: call.origin)
        var response = JSONBody.response { UserJSON.writeSession(issued, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }
}
