import Cryptography
import FoundationEssentials
import Outbox
import Postgres
import WebAuthn

/// Passkeys: a signed-in user registers them; anyone signs in with one (discoverable, the user
/// verified, the challenge single use, the counter checked). The WebAuthn checks are the
/// `WebAuthn` module's; the challenges, the credentials and the session are here.
extension SignInMethods {
    /// How long a challenge may be answered.
    static let challengeSeconds = 300.0

    /// `POST /users/me/passkeys/registration/options`: a new challenge for the user, and their
    /// passkeys (for `excludeCredentials`).
    public func passkeyRegistrationChallenge(userID: UUID) throws -> (challenge: [UInt8], existing: [Passkey]) {
        let challenge = try SecureRandom.bytes(count: 32)
        let existing = try context.pool.withConnection { connection in
            try PasskeyRepository.insertChallenge(
                connection, hash: SHA256.hash(challenge), purpose: .registration, userID: userID, lifetimeSeconds: Self.challengeSeconds,
                at: context.clock.now())
            return try PasskeyRepository.list(connection, userID: userID)
        }
        return (challenge, existing)
    }

    /// `POST /users/me/passkeys/registration`: the response's challenge must be one this user was
    /// given (used up here, whatever follows), its origin and RP id `party`'s, the user verified,
    /// the attestation `none` or a `packed` one that verifies. `422 invalid_passkey` otherwise.
    public func registerPasskey(_ registration: PasskeyRegistration, userID: UUID, party: RelyingParty, origin: RequestOrigin) throws -> Passkey {
        func refuse(_ reason: String) -> AccountsError {
            SecurityEvent.log(context.logger, .passkeyAdded, outcome: .failure, userID: userID, origin: origin, detail: reason)
            return AccountsError(.invalidPasskey, "The passkey was not registered: \(reason).")
        }
        let name = try Self.passkeyName(registration.name ?? "", allowingEmpty: true)
        let credential: NewCredential
        do {
            let clientData = try ClientData(json: registration.clientDataJSON)
            try party.check(clientData, .create)
            let live = try context.pool.withConnection {
                try PasskeyRepository.consumeChallenge(
                    $0, hash: SHA256.hash(clientData.challenge), purpose: .registration, userID: userID, at: context.clock.now())
            }
            guard live else { throw WebAuthnFailure("the challenge is unknown, used, expired or another user's") }
            credential = try NewCredential(attestationObject: registration.attestationObject, clientData: clientData, for: party)
            guard credential.id == registration.credentialID else { throw WebAuthnFailure("the credential id is not the attested one") }
        } catch let failure as WebAuthnFailure {
            throw refuse(failure.description)
        }
        let transports = registration.transports.filter { $0.utf8.count <= 32 && $0.allSatisfy { $0.isLetter || $0 == "-" } }.prefix(8)
        let passkey = try context.pool.withTransaction { connection -> Passkey in
            guard let user = try UserRepository.find(connection, id: userID) else { throw AccountsError.invalidToken }
            guard
                let passkey = try PasskeyRepository.insert(
                    connection, userID: userID, credentialID: credential.id, publicKey: credential.publicKey, signCount: credential.signCount,
                    name: name.isEmpty ? "Passkey" : name, aaguid: credential.aaguid, transports: Array(transports),
                    backupEligible: credential.backupEligible, backedUp: credential.backedUp)
            else { throw refuse("this credential is registered already") }
            try ActivityRepository.record(connection, userID: userID, .passkeyAdded, origin: origin)
            try mail.wayInAdded(connection, user: user, method: "A passkey", chosenMethod: "A passkey (\(passkey.name))", .passkey(passkey.id))
            return passkey
        }
        context.mailQueued()
        SecurityEvent.log(context.logger, .passkeyAdded, outcome: .success, userID: userID, origin: origin, detail: credential.format)
        return passkey
    }

    public func passkeys(of userID: UUID) throws -> [Passkey] {
        try context.pool.withConnection { try PasskeyRepository.list($0, userID: userID) }
    }

    public func renamePasskey(id: UUID, userID: UUID, name: String) throws -> Passkey {
        let name = try Self.passkeyName(name, allowingEmpty: false)
        guard let renamed = try context.pool.withConnection({ try PasskeyRepository.rename($0, id: id, userID: userID, name: name) }) else {
            throw AccountsError(.notFound, "No such passkey.")
        }
        return renamed
    }

    /// `DELETE /users/me/passkeys/{id}`: never the account's last way in (no password, no linked
    /// identity and no other passkey: `409 last_sign_in_method`). An administrator (`by`) may
    /// remove the last one (a compromised passkey; the user gets in again by a password reset).
    public func deletePasskey(id: UUID, userID: UUID, origin: RequestOrigin, by admin: Admin? = nil) throws {
        try removeWayIn(.passkey(id), userID: userID, origin: origin, by: admin)
    }

    /// `POST /users/signin/passkey/options`: a challenge for whoever asks (the route counts it per client address).
    public func passkeySignInChallenge(origin: RequestOrigin) throws -> [UInt8] {
        let challenge = try SecureRandom.bytes(count: 32)
        try context.pool.withConnection { connection in
            try PasskeyRepository.insertChallenge(
                connection, hash: SHA256.hash(challenge), purpose: .authentication, userID: nil, lifetimeSeconds: Self.challengeSeconds,
                at: context.clock.now())
        }
        return challenge
    }

    /// `POST /users/signin/passkey`: a discoverable credential's assertion. Every refusal is the
    /// same `401 invalid_credentials` (its reason goes to the security log). The route counts
    /// failures per client address like wrong passwords; a success gives its attempt back.
    public func signIn(with assertion: PasskeyAssertion, party: RelyingParty, origin: RequestOrigin) throws -> IssuedSession {
        var userID: UUID?
        func refuse(_ reason: String) -> AccountsError {
            context.statistics.signInFailures.add(1, ordering: .relaxed)
            SecurityEvent.log(context.logger, .signInFailed, outcome: .failure, userID: userID, origin: origin, detail: "passkey: \(reason)")
            if let userID { context.recordActivityLater(.signInFailed, userID: userID, origin: origin) }
            return AccountsError(.invalidCredentials, "The passkey was not accepted.")
        }
        let token = try SessionToken.generate()
        let issued: IssuedSession
        do {
            let (stored, checked) = try checkAssertion(assertion, party: party) { userID = $0 }
            let session = try context.pool.withTransaction { connection -> IssuedSession? in
                guard
                    try PasskeyRepository.use(
                        connection, id: stored.id, from: stored.signCount, to: checked.data.signCount, backedUp: checked.data.backedUp)
                else { return nil }
                guard let user = try UserRepository.find(connection, id: stored.userID) else { return nil }
                if try AdminRepository.isDisabled(connection, id: user.id) {
                    throw AccountsError(.accountDisabled, "An administrator disabled this account.")
                }
                let session = try sessions.openSession(connection, userID: user.id, tokenHash: token.hash, userAgent: origin.userAgent)
                try ActivityRepository.record(connection, userID: user.id, .signedIn, origin: origin, method: .passkey)
                return IssuedSession(accessToken: token.text, session: session, user: user)
            }
            guard let session else { throw WebAuthnFailure("another sign-in used the counter first") }
            issued = session
        } catch let failure as WebAuthnFailure {
            throw refuse(failure.description)
        }
        SecurityEvent.log(context.logger, .signedIn, outcome: .success, userID: issued.user.id, origin: origin, detail: "passkey")
        return issued
    }

    /// `POST /users/me/reauthenticate` with a passkey: an assertion (options from
    /// `/users/signin/passkey/options`) by a passkey of the session's user records that the
    /// session's holder proved it now, and returns that time. Its refusals are `422
    /// invalid_credentials` naming `passkey` (not 401: the session is good, and a client that hears
    /// 401 signs its user out); the route counts them as wrong current passwords.
    public func reauthenticate(session: Session, with assertion: PasskeyAssertion, party: RelyingParty, origin: RequestOrigin) throws -> Date {
        let now = context.clock.now()
        do {
            let (stored, checked) = try checkAssertion(assertion, party: party) { _ in }
            guard stored.userID == session.userID else { throw WebAuthnFailure("a passkey of another account") }
            try context.pool.withTransaction { connection in
                guard
                    try PasskeyRepository.use(
                        connection, id: stored.id, from: stored.signCount, to: checked.data.signCount, backedUp: checked.data.backedUp)
                else { throw WebAuthnFailure("another use of the passkey moved its counter first") }
                guard try SessionRepository.markAuthenticated(connection, id: session.id, userID: session.userID, at: now) else {
                    throw AccountsError(.invalidToken, "The session ended.")
                }
            }
        } catch let failure as WebAuthnFailure {
            SecurityEvent.log(
                context.logger, .passwordCheckFailed, outcome: .failure, userID: session.userID, origin: origin, detail: "passkey: \(failure)")
            throw AccountsError.field("passkey", .invalidCredentials, "was not accepted")
        }
        SecurityEvent.log(context.logger, .reauthenticated, outcome: .success, userID: session.userID, origin: origin, detail: "passkey")
        return now
    }

    /// Checks an assertion: its client data (origin, type), the challenge it answers (one handed
    /// out for a sign-in, used up here whatever follows), the credential it names and its user
    /// handle, and its signature and counter against the stored key. `found` learns the
    /// credential's user as soon as it is known (for the refusal's activity). Throws `WebAuthnFailure`.
    private func checkAssertion(
        _ assertion: PasskeyAssertion, party: RelyingParty, found: (UUID) -> Void
    ) throws -> (stored: (id: UUID, userID: UUID, publicKey: [UInt8], signCount: UInt32), checked: Assertion) {
        let clientData = try ClientData(json: assertion.clientDataJSON)
        try party.check(clientData, .get)
        let (live, stored) = try context.pool.withConnection { connection in
            (
                try PasskeyRepository.consumeChallenge(
                    connection, hash: SHA256.hash(clientData.challenge), purpose: .authentication, userID: nil, at: context.clock.now()),
                try PasskeyRepository.credential(connection, id: assertion.credentialID)
            )
        }
        guard let stored else { throw WebAuthnFailure("an unknown credential") }
        found(stored.userID)
        guard live else { throw WebAuthnFailure("the challenge is unknown, used or expired") }
        if let handle = assertion.userHandle, !ConstantTime.equals(handle, Self.userHandle(stored.userID)) {
            throw WebAuthnFailure("the user handle is not the credential's user")
        }
        let checked = try Assertion(
            authenticatorData: assertion.authenticatorData, signature: assertion.signature, clientData: clientData,
            storedKey: stored.publicKey, storedCount: stored.signCount, for: party)
        return (stored, checked)
    }

    /// A passkey's name, without the whitespace around it: 1 to 64 characters (counted as the
    /// database counts, in code points), by the name rules (`PersonName`: no control character or
    /// line break, `422 invalid_value`), since notices and the console show it.
    static func passkeyName(_ text: String, allowingEmpty: Bool) throws -> String {
        let name = String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        guard (allowingEmpty ? 0...64 : 1...64).contains(name.unicodeScalars.count) else {
            throw AccountsError.field("name", .invalidValue, allowingEmpty ? "at most 64 characters" : "1 to 64 characters")
        }
        if let problem = PersonName.problem(name) { throw AccountsError.field("name", .invalidValue, problem) }
        return name
    }

    /// The WebAuthn user handle of a user: the 16 bytes of their id (opaque, no personal data).
    public static func userHandle(_ userID: UUID) -> [UInt8] {
        withUnsafeBytes(of: userID.uuid) { Array($0) }
    }
}
