import API
import Cryptography
import ExosphereClient
import Foundation
import TestSupport
import Testing

/// Sign in with Google, identities, and the passkey calls' shapes through the client, against a
/// server whose Google keys come from a real key set server.
@Suite(.testThreads, .serialized)
struct SignInMethodsTests {
    static let client = "client-tests.apps.googleusercontent.com"

    @Test func googleSignInIdentitiesAndPasskeyOptions() async throws {
        let provider = try TestIdentityProvider()
        try provider.serve(["key-1"])
        let url = provider.keySetURL
        let server = try LiveServer("signin_methods") { configuration in
            configuration.identityProviders.google.clientIDs = [Self.client]
            configuration.identityProviders.google.keySetURL = url
        }
        defer { server.stop() }
        let email = server.uniqueEmail("google")
        let client = try server.client()
        // The server's nonce: the provider gets its SHA-256, the server the nonce beside the token.
        let nonce = try await client.identityTokenNonce()
        let claims = TestSigningKeys.claims(
            issuer: "https://accounts.google.com", audience: Self.client, subject: "client-g-1",
            extra: [
                "email": "\"\(email)\"", "email_verified": "true", "given_name": "\"Ayu\"", "nonce": "\"\(SHA256.hexDigest(nonce.utf8))\"",
            ])
        let token = try TestSigningKeys.shared().token(claims)
        let withoutNonce = await exosphereError { try await server.client().signIn(withGoogle: token) }
        #expect(withoutNonce?.status == 401 && withoutNonce?.code == .invalidIDToken, "nonces are required by default")
        let user = try await client.signIn(withGoogle: token, nonce: nonce)
        #expect(user.email == email && user.emailVerified && user.firstname == "Ayu")
        #expect(client.isSignedIn)
        let (identities, hasPassword) = try await client.identities()
        #expect(identities.map(\.provider) == [.google] && !hasPassword)
        let last = await exosphereError { try await client.unlinkIdentity(identities[0]) }
        #expect(last?.status == 409 && last?.code == .lastSignInMethod)
        let apple = await exosphereError { try await client.signIn(withApple: token) }
        #expect(apple?.status == 404, "Apple is off on this server")
        let forged = await exosphereError { try await server.client().signIn(withGoogle: token + "x") }
        #expect(forged?.status == 401 && forged?.code == .invalidIDToken)

        let creation = try await client.passkeyRegistrationOptions()
        #expect(creation.relyingPartyIdentifier == "localhost" || creation.relyingPartyIdentifier == "127.0.0.1")
        #expect(creation.challenge.count == 32 && creation.userID.count == 16 && creation.userName == email)
        #expect(creation.excludedCredentialIDs.isEmpty)
        let refused = await exosphereError {
            try await client.registerPasskey(
                PasskeyRegistration(credentialID: Data(count: 16), rawClientDataJSON: Data("{}".utf8), rawAttestationObject: Data([0xA0])))
        }
        #expect(refused?.status == 422 && refused?.code == .invalidPasskey)
        #expect(try await client.passkeys().isEmpty)
        let request = try await server.client().passkeySignInOptions()
        #expect(request.challenge.count == 32 && request.relyingPartyIdentifier == creation.relyingPartyIdentifier)
        let assertion = PasskeyAssertion(
            credentialID: Data(count: 16), rawClientDataJSON: Data("{}".utf8), rawAuthenticatorData: Data(count: 37), signature: Data(count: 8),
            userID: nil)
        let signIn = await exosphereError { try await server.client().signIn(withPasskey: assertion) }
        #expect(signIn?.status == 401 && signIn?.code == .invalidCredentials)
    }

    /// A change of the ways in needs a verified address and a recent proof of a credential; the
    /// client proves the password again with `reauthenticate(password:)`, which the sessions show.
    @Test func reauthenticationProvesThePasswordAgain() async throws {
        let server = try LiveServer("reauthenticate")
        defer { server.stop() }
        let client = try server.client()
        let password = "correct horse battery staple"
        _ = try await client.register(email: server.uniqueEmail("reauth"), password: password)
        let unverified = await exosphereError { _ = try await client.passkeyRegistrationOptions() }
        #expect(unverified?.status == 403 && unverified?.code == .emailUnverified)
        let wrong = await exosphereError { try await client.reauthenticate(password: "not the password") }
        #expect(wrong?.status == 403 && wrong?.code == .invalidPassword)
        let at = try await client.reauthenticate(password: password)
        let current = try #require(try await client.sessions().first { $0.isCurrent })
        #expect(current.authenticatedAt == at && at >= current.createdAt)
        // A passkey's assertion the server refuses is a 422 naming it; the client stays signed in.
        _ = try await client.passkeySignInOptions()
        let assertion = PasskeyAssertion(
            credentialID: Data(count: 16), rawClientDataJSON: Data("{}".utf8), rawAuthenticatorData: Data(count: 37), signature: Data(count: 8),
            userID: nil)
        let passkey = await exosphereError { try await client.reauthenticate(withPasskey: assertion) }
        #expect(passkey?.status == 422 && passkey?.code == .invalidCredentials, "\(String(describing: passkey))")
        #expect(try await client.sessions().contains { $0.isCurrent }, "still signed in")
    }

    /// Two-step verification through the client: enrolment (the secret, URI and QR code), the
    /// typed `mfa_required` whose `secondFactor` finishes the sign-in, recovery codes, and the
    /// step-up that asks for a code with the password.
    @Test func aSecondFactorThroughTheClient() async throws {
        let server = try LiveServer("second_factor")
        defer { server.stop() }
        let client = try server.client()
        let email = server.uniqueEmail("mfa")
        let password = "correct horse battery staple"
        let user = try await client.register(email: email, password: password)
        try server.withDatabase { _ = try $0.query("UPDATE users SET email_verified = true WHERE id = \(user.id)::uuid") }
        let off = try await client.secondFactor()
        #expect(!off.totpEnabled && off.recoveryCodesLeft == 0)
        let enrolment = try await client.startTOTPEnrolment()
        #expect(enrolment.uri.contains(enrolment.secret) && enrolment.qrCodeSVG.hasPrefix("<svg"))
        let wrong = await exosphereError { _ = try await client.confirmTOTPEnrolment(code: "000000") }
        #expect(wrong?.status == 422 && wrong?.code == .invalidCode)
        let codes = try await client.confirmTOTPEnrolment(code: try totpCode(secret: enrolment.secret, at: Date()))
        #expect(codes.count == 10)
        let again = await exosphereError { _ = try await client.startTOTPEnrolment() }
        #expect(again?.status == 409 && again?.code == .alreadyEnabled)

        let other = try server.client()
        let required = await exosphereError { _ = try await other.signIn(email: email, password: password) }
        #expect(required?.status == 401 && required?.code == .mfaRequired && required?.isSessionExpired == false)
        let challenge = try #require(required?.secondFactor)
        #expect(challenge.factors == ["totp", "recovery_code"])
        let badCode = await exosphereError { _ = try await other.finishSignIn(challenge, code: "123456") }
        #expect(badCode?.status == 401 && badCode?.code == .invalidCode)
        let signedIn = try await other.finishSignIn(challenge, code: codes[0])
        #expect(signedIn.email == email)
        #expect(try await other.secondFactor().recoveryCodesLeft == 9)
        let reused = await exosphereError {
            _ = try await other.finishSignIn(try #require(required?.secondFactor), code: codes[1])
        }
        #expect(reused?.code == .invalidMFAToken, "the challenge was spent")
        let withoutCode = await exosphereError { _ = try await other.reauthenticate(password: password) }
        #expect(withoutCode?.status == 422 && withoutCode?.code == .invalidCode)
        try await other.reauthenticate(password: password, code: codes[2])
        let fresh = try await other.regenerateRecoveryCodes()
        #expect(fresh.count == 10 && Set(fresh).isDisjoint(with: codes))
        try await other.disableTOTP()
        #expect(try await other.secondFactor().totpEnabled == false)
    }
}
