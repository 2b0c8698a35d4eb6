import Cryptography
import FoundationEssentials
import JSON
import Postgres

/// Administrators (made on the server's machine with `exosphere admin …`), their sign-in and
/// sessions, the audit log, and what they may do to users.
extension AccountService {
    // MARK: - The command line

    /// A new administrator; `admin_exists` when the email has one, `weak_password` under the user policy.
    public func createAdmin(email text: String, password: String) throws -> Admin {
        let email = try adminEmail(text)
        try checkAdminPassword(password)
        let hash = try context.onHashingPool(.bulk, nil) { [hasher = context.hasher] in try hasher.hash(password: password) }
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
        let hash = try context.onHashingPool(.bulk, nil) { [hasher = context.hasher] in try hasher.hash(password: password) }
        return try context.pool.withTransaction { try AdminRepository.setPassword($0, email: email, passwordHash: hash) }
    }

    /// Records a command of `exosphere admin` or `exosphere keys` in the audit log, as run by
    /// `operatorName` (the operating-system user); the command fails if it cannot be recorded.
    public static func auditCommand(_ action: AuditAction, by operatorName: String, on pool: PostgresPool) throws {
        try pool.withConnection { try AdminRepository.auditCommand($0, operator: operatorName, action: action) }
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
        let hash = try context.onHashingPool(.interactive, origin) { [hasher = context.hasher] in try hasher.hash(password: password) }
        let session = try SessionToken.generate()
        let (admin, expiresAt) = try context.pool.withTransaction { connection -> (Admin, Date) in
            // One setup at a time, whichever instance printed its link: the check that there is no
            // administrator and the insert are one step for every other setup.
            try connection.execute("LOCK TABLE admins IN SHARE ROW EXCLUSIVE MODE")
            guard try connection.execute("DELETE FROM admin_setup_tokens WHERE token_hash = \(tokenHash) AND expires_at > \(context.clock.now())") == 1 else {
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

    /// Checks an administrator's password under throttles of their own with the users' rules,
    /// counted before hashing: per email and address (the owner rule: an address that guessed
    /// wrong exhausts its own tries; the owner, from elsewhere, still signs in), per email from all
    /// addresses, and per address whatever the email. In a storm it is refused before any
    /// database work, as users' sign-ins are, so that it cannot fill the hashing pool.
    public func adminSignIn(email text: String, password: String, origin: RequestOrigin) throws -> IssuedAdminSession {
        let invalid = AccountsError(.invalidCredentials, "The email or password is wrong.")
        try context.refuseWhenHashingIsFull(for: origin)
        let email = EmailAddress(text)
        let emailID = email?.normalized ?? "sha256:" + SHA256.hexDigest(text.lowercased().utf8)
        let throttles = [
            (key: "admin-signin:pair:" + emailID + " " + origin.throttleAddress, rule: context.configuration.signInPerEmailAndAddress),
            (key: "admin-signin:email:" + emailID, rule: context.configuration.signInPerEmail),
            (key: "admin-signin:address:" + origin.throttleAddress, rule: context.configuration.signInPerAddress),
        ]
        let (wait, credentials) = try context.pool.withConnection { connection in
            (
                try context.throttles.acquire(connection, throttles),
                try email.flatMap { try AdminRepository.credentials(connection, email: $0) }
            )
        }
        if let wait { throw AccountsError(.tooManyAttempts, "Too many failed sign-ins; try again later.", retryAfterSeconds: wait) }
        let tooLong = password.utf8.count > context.configuration.passwordPolicy.maxBytes
        let valid: Bool
        do {
            valid = try context.onHashingPool(.interactive, origin) { [hasher = context.hasher] () -> Bool in
                guard let credentials, !tooLong else {
                    try hasher.dummyVerify(password: tooLong ? "" : password)
                    return false
                }
                return (try? hasher.verify(password: password, phc: credentials.passwordHash).isValid) ?? false
            }
        } catch {
            // Refused or abandoned before any hashing: the attempt does not count.
            context.throttles.giveBack(throttles.map(\.key))
            throw error
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
        context.throttles.giveBack([throttles[1].key, throttles[2].key], clearing: throttles[0].key)
        return IssuedAdminSession(accessToken: token.text, expiresAt: expiresAt, admin: credentials.admin)
    }

    /// The administrator of a live admin session, or `invalid_token` (a user's token included).
    public func authenticateAdmin(token: String) throws -> Admin {
        guard SessionToken.isWellFormed(token),
            let admin = try context.pool.withConnection({ try AdminRepository.authenticate($0, tokenHash: SessionToken.hash(of: token), at: context.clock.now()) })
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

    // MARK: - The audit log

    /// Records an action; the request fails if it cannot be recorded.
    public func audit(_ admin: Admin, _ action: AuditAction, target: UUID? = nil, origin: RequestOrigin) throws {
        try context.pool.withConnection { try AdminRepository.audit($0, admin: admin, action: action, target: target, address: origin.address) }
    }

    /// Newest first; `next` is the id to page from.
    public func auditPage(before id: Int64?, limit: Int) throws -> (entries: [AuditEntry], next: Int64?) {
        let rows = try context.pool.withConnection { try AdminRepository.auditPage($0, before: id, limit: limit + 1) }
        let entries = Array(rows.prefix(limit))
        return (entries, rows.count > limit ? entries.last?.id : nil)
    }

    // MARK: - Users

    /// Users whose email contains a text and whose custom fields hold the given typed values,
    /// newest first. A field that does not exist is `unknown_field`; a value that does not parse
    /// as the field's type is `invalid_type`.
    public func searchUsers(_ search: UserSearch, after cursor: KeysetCursor?, limit: Int) throws -> AdminUserPage {
        // PostgreSQL text holds no U+0000, and no email is longer than 254 bytes.
        if let text = search.emailContains, text.utf8.count > 254 || text.contains("\u{0}") {
            throw AccountsError.invalid([AccountsError.FieldError(field: "q", code: .invalidValue, detail: "at most 254 bytes, no U+0000")])
        }
        for (name, value) in search.fields where value.contains("\u{0}") || value.utf8.count > 4096 {
            throw AccountsError.invalid([
                AccountsError.FieldError(field: "field." + name, code: .invalidValue, detail: "at most 4096 bytes, no U+0000")
            ])
        }
        var containment: String?
        if !search.fields.isEmpty {
            let types = try profiles.fieldTypes()
            var object = JSONObject()
            var problems: [AccountsError.FieldError] = []
            for (name, text) in search.fields {
                let path = "field." + name
                guard let type = types[name] else {
                    problems.append(AccountsError.FieldError(field: path, code: .unknownField, detail: "no user has a field named \(name)"))
                    continue
                }
                guard let value = AccountService.typedValue(text, type, limits: context.configuration.fieldLimits) else {
                    problems.append(AccountsError.FieldError(field: path, code: .invalidType, detail: "expected \(type.rawValue)"))
                    continue
                }
                object[name] = value
            }
            if !problems.isEmpty { throw AccountsError.invalid(problems) }
            var writer = JSONWriter()
            writer.value(.object(object))
            containment = String(decoding: writer.bytes, as: UTF8.self)
        }
        let email = search.emailContains.map { $0.lowercased() }.flatMap { $0.isEmpty ? nil : $0 }
        // Planned for each search's own values: a plan cached for one field's rare value (read the
        // matches from the GIN index, then sort) is 50× slower for a common one, where walking the
        // newest-first index until the page is full is right (bench/admin-search.sh measured both).
        let rows = try context.pool.withTransaction { connection in
            try connection.execute("SET LOCAL plan_cache_mode = force_custom_plan")
            return try AdminRepository.search(connection, emailContains: email, containment: containment, after: cursor, limit: limit + 1)
        }
        let users = Array(rows.prefix(limit))
        let next = rows.count > limit ? users.last.map { KeysetCursor(microseconds: $0.1, id: $0.0.user.id) } : nil
        return AdminUserPage(users: users.map(\.0), next: next)
    }

    /// A query parameter's text as a value of the field's type, or nil.
    static func typedValue(_ text: String, _ type: FieldType, limits: CustomFieldLimits) -> JSONValue? {
        let literal: JSONValue?
        switch type {
        case .string, .date, .datetime: literal = .string(text)
        case .boolean: literal = text == "true" ? .bool(true) : text == "false" ? .bool(false) : nil
        case .integer, .double:
            literal = (try? JSONParser.parse(text, limits: JSONLimits(maxDepth: 1, maxBytes: 64, maxNumberLength: 64))).flatMap {
                if case .number = $0 { $0 } else { nil }
            }
        }
        return literal.flatMap { type.canonical($0, limits: limits) }
    }

    public func adminView(of id: UUID) throws -> AdminUserView {
        guard let view = try context.pool.withConnection({ try AdminRepository.view($0, id: id) }) else {
            throw AccountsError(.notFound, "There is no user with this id.")
        }
        return view
    }

    /// Disables a user (every session ends at once) or enables them again, and records it.
    public func setDisabled(_ id: UUID, _ disabled: Bool, by admin: Admin, origin: RequestOrigin) throws {
        let found = try context.pool.withTransaction { connection in
            guard try AdminRepository.setDisabled(connection, id: id, disabled: disabled) else { return false }
            try AdminRepository.audit(
                connection, admin: admin, action: disabled ? .userDisable : .userEnable, target: id, address: origin.address)
            return true
        }
        guard found else { throw AccountsError(.notFound, "There is no user with this id.") }
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

extension AccountService {
    // MARK: - An administrator's actions on a user

    /// Deletes a user with everything of theirs (`alsoDelete` runs in the same transaction, for the
    /// image rows), and records it.
    public func adminDeleteUser(_ id: UUID, by admin: Admin, origin: RequestOrigin, alsoDelete: (PostgresConnection) throws -> Void) throws {
        let found = try context.pool.withTransaction { connection in
            guard try UserRepository.find(connection, id: id, forUpdate: true) != nil else { return false }
            try alsoDelete(connection)
            _ = try UserRepository.delete(connection, id: id)
            try context.throttles.clear(connection, key: Throttles.passwordKey(id))
            try AdminRepository.audit(connection, admin: admin, action: .userDelete, target: id, address: origin.address)
            return true
        }
        guard found else { throw AccountsError(.notFound, "There is no user with this id.") }
        SecurityEvent.log(context.logger, .accountDeleted, outcome: .success, userID: id, origin: origin, detail: "by an administrator")
    }

    /// Ends one session of a user (`sessionID`), or all of them; the number ended.
    @discardableResult
    public func adminRevokeSessions(of userID: UUID, sessionID: UUID?, by admin: Admin, origin: RequestOrigin) throws -> Int {
        let ended = try context.pool.withTransaction { connection -> Int? in
            guard try UserRepository.find(connection, id: userID) != nil else { return nil }
            let ended: Int
            if let sessionID {
                guard try SessionRepository.delete(connection, id: sessionID, userID: userID) else { return -1 }
                ended = 1
            } else {
                ended = try connection.execute("DELETE FROM sessions WHERE user_id = \(userID)")
            }
            try ActivityRepository.record(connection, userID: userID, .sessionRevoked, origin: origin)
            try AdminRepository.audit(
                connection, admin: admin, action: sessionID == nil ? .userSessionsRevokeAll : .userSessionRevoke, target: userID,
                address: origin.address)
            return ended
        }
        guard let ended else { throw AccountsError(.notFound, "There is no user with this id.") }
        guard ended >= 0 else { throw AccountsError(.notFound, "No such session.") }
        return ended
    }

    /// Mails the user a password reset link, as `POST /users/password-reset` does, and records it.
    public func adminSendPasswordReset(_ userID: UUID, by admin: Admin, origin: RequestOrigin) throws {
        let user = try adminView(of: userID).user
        guard let email = EmailAddress(user.email) else { throw AccountsError(.invalidEmail, "The user's stored address is not valid.") }
        try recovery.requestPasswordReset(email: email, origin: origin)
        try audit(admin, .userPasswordReset, target: userID, origin: origin)
    }
}
