import Cryptography
import FoundationEssentials
import JSON
import Postgres

/// Administrators (made on the server's machine with `exosphere admin …`, or the first one by the
/// console's setup link), their sign-in and sessions. What they do is `Administration`'s.
public final class Administrators: Sendable {
    private let context: AccountsContext

    init(context: AccountsContext) {
        self.context = context
    }

    // MARK: - The command line

    /// A new administrator; `admin_exists` when the email has one, `weak_password` under the user policy.
    public func createAdmin(email text: String, password: String) throws -> Admin {
        let email = try adminEmail(text)
        try checkAdminPassword(password)
        let hash = try context.onHashingPool(nil, outsideARoute: .bulk) { [hasher = context.hasher] in try hasher.hash(password: password) }
        guard let admin = try context.pool.withConnection({ try AdminRepository.insert($0, email: email, passwordHash: hash) }) else {
            throw AccountsError(.adminExists, "An administrator with this email exists.")
        }
        return admin
    }

    public func admins() throws -> [Admin] {
        try context.pool.withConnection { try AdminRepository.all($0) }
    }

    /// Deletes an administrator and ends their sessions; false when there is none.
    public func deleteAdmin(email text: String) throws -> Bool {
        let email = try adminEmail(text)
        return try context.pool.withConnection { try AdminRepository.delete($0, email: email) }
    }

    /// Turns an administrator's second factor off (a lost phone); false when they have none on.
    public func resetAdminSecondFactor(email text: String) throws -> Bool {
        let email = try adminEmail(text)
        return try context.pool.withTransaction { connection in
            guard let admin = try AdminRepository.credentials(connection, email: email)?.admin else { return false }
            return try MFARepository.delete(connection, of: .admin(admin.id))
        }
    }

    /// A new password for an administrator, ending their sessions; false when there is none.
    public func resetAdminPassword(email text: String, password: String) throws -> Bool {
        let email = try adminEmail(text)
        try checkAdminPassword(password)
        let hash = try context.onHashingPool(nil, outsideARoute: .bulk) { [hasher = context.hasher] in try hasher.hash(password: password) }
        return try context.pool.withTransaction { try AdminRepository.setPassword($0, email: email, passwordHash: hash) }
    }

    // MARK: - The first administrator, in the browser

    /// How long a setup link lasts.
    public static let adminSetupSeconds = 3_600

    /// A one-time token for the console's setup link (`/console/#setup=<token>`), while there is
    /// no administrator; nil once there is one. Only its hash is stored; it lasts an hour.
    public func issueAdminSetupToken() throws -> String? {
        let token = try SessionToken.generate()
        let issued = try context.pool.withTransaction { connection -> Bool in
            let now = context.clock.now()
            try connection.execute("DELETE FROM admin_setup_tokens WHERE expires_at <= \(now)")
            return try connection.execute(
                """
                INSERT INTO admin_setup_tokens (token_hash, expires_at)
                SELECT \(token.hash), \(now) + make_interval(secs => \(Self.adminSetupSeconds))
                WHERE NOT EXISTS (SELECT 1 FROM admins)
                """) == 1
        }
        return issued ? token.text : nil
    }

    /// Creates the first administrator with a setup token and opens their session: the token is
    /// consumed, and every other setup token with it. `invalid_token` for a token that is not
    /// live (checked before the password is hashed); `admin_exists` once there is an
    /// administrator, also when two setups race.
    public func completeAdminSetup(token: String, email text: String, password: String, origin: RequestOrigin) throws -> IssuedAdminSession {
        let invalid = AccountsError(.invalidToken, "The setup link is unknown, used or expired: restart the server for a new one.")
        guard SessionToken.isWellFormed(token) else { throw invalid }
        let tokenHash = SessionToken.hash(of: token)
        let isLive = try context.pool.withConnection { connection in
            try !connection.query("SELECT 1 FROM admin_setup_tokens WHERE token_hash = \(tokenHash) AND expires_at > \(context.clock.now())").isEmpty
        }
        guard isLive else { throw invalid }
        let email = try adminEmail(text)
        try checkAdminPassword(password)
        let hash = try context.onHashingPool(origin) { [hasher = context.hasher] in try hasher.hash(password: password) }
        let session = try SessionToken.generate()
        let (admin, expiresAt) = try context.pool.withTransaction { connection -> (Admin, Date) in
            // One setup at a time, whichever instance printed its link: the check that there is no
            // administrator and the insert are one step for every other setup.
            try connection.execute("LOCK TABLE admins IN SHARE ROW EXCLUSIVE MODE")
            guard
                try connection.execute("DELETE FROM admin_setup_tokens WHERE token_hash = \(tokenHash) AND expires_at > \(context.clock.now())") == 1
            else {
                throw invalid
            }
            guard try connection.query("SELECT 1 FROM admins LIMIT 1").isEmpty,
                let admin = try AdminRepository.insert(connection, email: email, passwordHash: hash)
            else {
                throw AccountsError(.adminExists, "There is an administrator already: sign in, or ask one for an account.")
            }
            try connection.execute("DELETE FROM admin_setup_tokens")
            let expiresAt = try AdminRepository.openSession(connection, adminID: admin.id, tokenHash: session.hash, at: context.clock.now())
            try AdminRepository.audit(connection, admin: admin, action: .adminSetup, target: nil, address: origin.address)
            return (admin, expiresAt)
        }
        return IssuedAdminSession(accessToken: session.text, expiresAt: expiresAt, admin: admin)
    }

    // MARK: - Sign-in and sessions

    /// Checks an administrator's password. The route counts the attempt before, under throttles
    /// of its own with the users' rules: per email and address (the owner rule: an address that
    /// guessed wrong exhausts its own tries; the owner, from elsewhere, still signs in), per email
    /// from all addresses, and per address whatever the email; in a storm it is refused before any
    /// database work, as users' sign-ins are, so that it cannot fill the hashing pool.
    ///
    /// A success remembers its client (`AdminClient`): its address, and its device token, a new
    /// one when it brought none this administrator knows (`IssuedAdminSession.deviceToken`).
    public func adminSignIn(email text: String, password: String, client: AdminClient, origin: RequestOrigin) throws -> IssuedAdminSession {
        let invalid = AccountsError(.invalidCredentials, "The email or password is wrong.")
        let credentials = try EmailAddress(text).flatMap { email in
            try context.pool.withConnection { try AdminRepository.credentials($0, email: email) }
        }
        let tooLong = password.utf8.count > context.configuration.passwordPolicy.maxBytes
        let valid = try context.onHashingPool(origin) { [hasher = context.hasher] () -> Bool in
            guard let credentials, !tooLong else {
                try hasher.dummyVerify(password: tooLong ? "" : password)
                return false
            }
            return (try? hasher.verify(password: password, phc: credentials.passwordHash).isValid) ?? false
        }
        guard valid, let credentials else {
            SecurityEvent.log(context.logger, .signInFailed, outcome: .failure, userID: nil, origin: origin, detail: "administrator sign-in")
            // The same statement for an unknown email and a wrong password: the same work either way.
            try context.pool.withConnection { try AdminRepository.auditFailedSignIn($0, email: text, address: origin.address) }
            throw invalid
        }
        let token = try SessionToken.generate()
        let newDevice = try SessionToken.generate()
        let now = context.clock.now()
        let adminID = credentials.admin.id
        // With the administrator's second factor on, the password proved one factor.
        if let challenge = try context.pool.withTransaction({ connection in
            try SecondFactor.challenge(connection, owner: .admin(adminID), method: "password", context: context)
        }) {
            throw AccountsError.mfaRequired(token: challenge)
        }
        return try context.pool.withTransaction { connection in
            try openAdminSession(connection, admin: credentials.admin, token: token, newDevice: newDevice, client: client, origin: origin, at: now)
        }
    }

    /// An administrator's new session, audited, with the sign-in's client remembered: its address,
    /// and its device (a new token when it brought none this administrator knows).
    private func openAdminSession(
        _ connection: PostgresConnection, admin: Admin, token: SessionToken, newDevice: SessionToken, client: AdminClient, origin: RequestOrigin,
        at now: Date
    ) throws -> IssuedAdminSession {
        let expiresAt = try AdminRepository.openSession(connection, adminID: admin.id, tokenHash: token.hash, at: now)
        try AdminRepository.audit(connection, admin: admin, action: .adminSignIn, target: nil, address: origin.address)
        let deviceIsKnown =
            try client.device.map { device in
                try AdminRepository.isKnownClient(connection, adminID: admin.id, hash: device, since: now - AdminClient.remembered)
            } ?? false
        let device = deviceIsKnown ? client.device! : AdminClient.deviceHash(of: newDevice.text)
        try AdminRepository.rememberClients(
            connection, adminID: admin.id, hashes: [client.address, device], at: now, kept: AdminClient.keptPerAdministrator)
        return IssuedAdminSession(accessToken: token.text, expiresAt: expiresAt, admin: admin, deviceToken: deviceIsKnown ? nil : newDevice.text)
    }

    /// Whether `client` signed in as the administrator of `email` in the last 90 days: such a
    /// sign-in is not held by the per-email counter that strangers' guesses fill.
    public func isKnownClient(email text: String, client: AdminClient) throws -> Bool {
        guard let email = EmailAddress(text) else { return false }
        let since = context.clock.now() - AdminClient.remembered
        return try context.pool.withConnection { connection in
            try AdminRepository.isKnownClient(connection, email: email, hashes: [client.address] + (client.device.map { [$0] } ?? []), since: since)
        }
    }

    /// `POST /admin/signin/mfa`: the code (TOTP or recovery) that finishes an administrator's
    /// sign-in opens the session, as the password alone does without a second factor.
    public func finishAdminSignIn(token text: String, code: String, client: AdminClient, origin: RequestOrigin) throws -> IssuedAdminSession {
        let invalidToken = AccountsError(.invalidMFAToken, "The mfaToken is unknown, used or expired: sign in again.")
        guard SessionToken.isWellFormed(text) else { throw invalidToken }
        let tokenHash = SessionToken.hash(of: text)
        let token = try SessionToken.generate()
        let newDevice = try SessionToken.generate()
        enum Outcome {
            case issued(IssuedAdminSession)
            case wrong(ended: Bool)
        }
        let outcome = try context.pool.withTransaction { connection -> Outcome in
            let now = context.clock.now()
            guard let challenge = try MFARepository.challenge(connection, tokenHash: tokenHash, at: now),
                let factor = try MFARepository.factor(connection, id: challenge.factorID), case .admin(let adminID) = factor.owner,
                let admin = try AdminRepository.find(connection, id: adminID)
            else { throw invalidToken }
            guard try SecondFactor.verify(connection, factor: factor, code: code, at: now) != nil else {
                let ended = try MFARepository.countFailure(connection, tokenHash: tokenHash) >= SecondFactor.failuresPerChallenge
                if ended { try MFARepository.deleteChallenge(connection, tokenHash: tokenHash) }
                try AdminRepository.auditFailedSignIn(connection, email: admin.email, address: origin.address)
                return .wrong(ended: ended)
            }
            try MFARepository.deleteChallenge(connection, tokenHash: tokenHash)
            return .issued(
                try openAdminSession(connection, admin: admin, token: token, newDevice: newDevice, client: client, origin: origin, at: now))
        }
        switch outcome {
        case .issued(let issued): return issued
        case .wrong(let ended):
            SecurityEvent.log(context.logger, .mfaFailed, outcome: .failure, userID: nil, origin: origin, detail: "administrator sign-in")
            if ended { throw AccountsError(.invalidMFAToken, "Five wrong codes ended this sign-in: sign in again.") }
            throw AccountsError(.invalidCode, "The code is wrong, used, or outside its 30-second window.")
        }
    }

    /// The administrator of a live admin session, or `invalid_token` (a user's token included).
    public func authenticateAdmin(token: String) throws -> Admin {
        guard SessionToken.isWellFormed(token),
            let admin = try context.pool.withConnection({
                try AdminRepository.authenticate($0, tokenHash: SessionToken.hash(of: token), at: context.clock.now())
            })
        else { throw AccountsError.invalidToken }
        return admin
    }

    /// Ends the admin session of a token (the session of `admin`, authenticated from it), and
    /// records it; `invalid_token` when another request ended it first.
    public func adminSignOut(_ admin: Admin, token: String, origin: RequestOrigin) throws {
        try context.pool.withTransaction { connection in
            guard try connection.execute("DELETE FROM admin_sessions WHERE token_hash = \(SessionToken.hash(of: token))") == 1 else {
                throw AccountsError.invalidToken
            }
            try AdminRepository.audit(connection, admin: admin, action: .adminSignOut, target: nil, address: origin.address)
        }
    }

    // MARK: - Helpers

    private func adminEmail(_ text: String) throws -> EmailAddress {
        guard let email = EmailAddress(text) else { throw AccountsError(.invalidEmail, "The email address is not valid.") }
        return email
    }

    private func checkAdminPassword(_ password: String) throws {
        try context.configuration.passwordPolicy.validate(password, field: "password")
    }
}

/// Where an administrator's sign-in comes from, as the known clients remember it: the SHA-256 of
/// its address, and of the device token its cookie carries (when one is well formed).
public struct AdminClient: Sendable {
    /// How long a client is remembered after its last successful sign-in.
    static let remembered: TimeInterval = 90 * 86_400
    /// The newest clients kept per administrator (addresses and devices together).
    static let keptPerAdministrator = 20

    let address: [UInt8]
    let device: [UInt8]?

    public init(address: String, deviceToken: String?) {
        self.address = SHA256.hash(Array("address:\(address)".utf8))
        self.device = deviceToken.flatMap { SessionToken.isWellFormed($0) ? Self.deviceHash(of: $0) : nil }
    }

    static func deviceHash(of token: String) -> [UInt8] { SHA256.hash(Array("device:\(token)".utf8)) }
}
