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
    public func adminSignIn(email text: String, password: String, origin: RequestOrigin) throws -> IssuedAdminSession {
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
        let expiresAt = try context.pool.withTransaction { connection in
            let expiresAt = try AdminRepository.openSession(connection, adminID: credentials.admin.id, tokenHash: token.hash, at: context.clock.now())
            try AdminRepository.audit(connection, admin: credentials.admin, action: .adminSignIn, target: nil, address: origin.address)
            return expiresAt
        }
        return IssuedAdminSession(accessToken: token.text, expiresAt: expiresAt, admin: credentials.admin)
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
