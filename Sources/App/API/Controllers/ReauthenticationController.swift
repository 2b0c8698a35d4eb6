import Accounts
import FoundationEssentials
import HTTP
import HTTPServer
import JSON

/// `POST /users/me/reauthenticate`: the session's holder proves a credential again (adding or
/// removing a way in needs one within `--recent-authentication-seconds`), with the password, a
/// passkey of the account, or the ID token of an identity linked to it.
struct ReauthenticationController: Controller {
    let accounts: AccountService
    let providers: IdentityProviders
    let party: RelyingPartySource

    static func declare(_ routes: inout Routes<Self>) {
        // Failures count as wrong current passwords do (the password change's counter); a success clears it.
        routes.user(
            .post, "/users/me/reauthenticate", body: Self.proof,
            throttle: Throttling(.passwordCheck, [.perUser], success: .givesBack(clearing: .perUser)), hashing: .interactive,
            use: Self.reauthenticate)
        // Each mails the account's address: per user, as verification mails are.
        routes.user(
            .post, "/users/me/reauthenticate/code", throttle: Throttling(.emailCodeRequest, [.perUser]), use: Self.mailCode)
    }

    /// What a holder proves themselves with: a first factor, and with the second factor on, a
    /// code as well (`totp` or `recoveryCode`; a passkey with user verification is both).
    struct Proof: Sendable {
        let first: FirstFactor
        /// The code and the member it came in.
        let code: (field: String, value: String)?
    }

    enum FirstFactor: Sendable {
        /// `{password}`.
        case password(String)
        /// `{provider, idToken, nonce}`.
        case identity(IdentitiesController.IDToken)
        /// `{passkey: AuthenticationResponseJSON}` (options from `/users/signin/passkey/options`).
        case passkey(PasskeyAssertion)
        /// `{code}`, mailed by `POST /users/me/reauthenticate/code`.
        case emailCode(String)
    }

    @Sendable func proof(_ call: Call) throws -> Proof {
        let object = try JSONBody.object(call.request)
        let body = RequestBody(object: object)
        let codes: Set<String> = ["totp", "recoveryCode"]
        var code: (String, String)?
        for field in codes.sorted() {
            if let value = try body.string(field) {
                guard code == nil else { throw AccountsError.field(field, .invalidValue, "send totp or recoveryCode, not both") }
                code = (field, value)
            }
        }
        if object["password"] != nil {
            try body.checkKeys(allowed: codes.union(["password"]))
            return Proof(first: .password(try body.string("password", required: true)!), code: code)
        }
        if object["code"] != nil {
            try body.checkKeys(allowed: codes.union(["code"]))
            return Proof(first: .emailCode(try body.string("code", required: true)!), code: code)
        }
        if let passkey = object["passkey"] {
            try body.checkKeys(allowed: ["passkey"])
            guard let assertion = passkey.objectValue else { throw AccountsError.field("passkey", .invalidType, "expected an object") }
            return Proof(first: .passkey(try PasskeysController.assertion(assertion)), code: nil)
        }
        try body.checkKeys(allowed: codes.union(["provider", "idToken", "nonce"]))
        guard let providerText = try body.string("provider") else {
            throw AccountsError.field("password", .invalidValue, "is required (or code, or passkey, or provider, idToken and nonce)")
        }
        guard let provider = IdentityProvider(rawValue: providerText) else {
            throw AccountsError.field("provider", .invalidValue, "expected apple or google")
        }
        guard providers.isOn(provider) else { throw AccountsError(.notFound, "\(provider.displayName) is not configured.") }
        let token = IdentitiesController.IDToken(
            provider: provider, idToken: try body.string("idToken", required: true)!, nonce: try body.string("nonce"))
        return Proof(first: .identity(token), code: code)
    }

    /// `200 {"authenticatedAt"}`.
    @Sendable func reauthenticate(_ call: Call, _ proof: Proof) async throws -> Response {
        let (session, origin) = (call.signedIn.session, call.origin)
        let at: Date
        if case .passkey = proof.first {
            // A passkey with user verification proves both factors.
        } else {
            try accounts.secondFactor.verifyForStepUp(
                userID: session.userID, code: proof.code?.value, field: proof.code?.field ?? "totp", origin: origin)
        }
        switch proof.first {
        case .password(let password):
            at = try accounts.passwords.reauthenticate(password: password, session: session, origin: origin)
        case .identity(let token):
            let verified = await providers.verify(token.provider, idToken: token.idToken, nonce: token.nonce)
            at = try accounts.signInMethods.reauthenticate(session: session, nonce: token.nonce, origin: origin) { try verified.get() }
        case .passkey(let assertion):
            at = try accounts.signInMethods.reauthenticate(session: session, with: assertion, party: try party.current, origin: origin)
        case .emailCode(let code):
            at = try accounts.emailCodes.reauthenticate(code: code, session: session, origin: origin)
        }
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("authenticatedAt"); writer.string(UserJSON.timestamp(at))
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `202`: a code to the account's address; `409 no_address` without one.
    @Sendable func mailCode(_ call: Call) throws -> Response {
        try accounts.emailCodes.requestReauthenticationCode(user: call.signedIn.user)
        return JSONBody.response(.accepted) { writer in
            writer.beginObject()
            writer.key("status"); writer.string("accepted")
            writer.key("detail"); writer.string("A code is on its way to the account's address.")
            writer.endObject()
        }
    }
}
