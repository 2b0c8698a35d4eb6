import Cryptography
import FoundationEssentials
import JSON
import Postgres

/// An administrator: an account of its own, never a user.
public struct Admin: Sendable, Equatable {
    public let id: UUID
    public let email: String
    public let createdAt: Date
}

/// A new admin session: the bearer token (shown once) and when it ends at the latest.
public struct IssuedAdminSession: Sendable {
    public let accessToken: String
    public let expiresAt: Date
    public let admin: Admin
    /// A new device token for the sign-in's client to keep (a cookie), when it brought none this
    /// administrator knows: a later sign-in with it is not held by the per-email counter.
    public var deviceToken: String? = nil
}

/// One administrator action.
public struct AuditEntry: Sendable, Equatable {
    public let id: Int64
    public let at: Date
    public let adminEmail: String
    public let action: String
    public let targetUserID: UUID?
    public let ipAddress: String?
}

/// What an administrator sees of a user.
public struct AdminUserView: Sendable {
    public let user: User
    public let disabled: Bool
    public let sessionCount: Int
    public let imageCount: Int
    public let lastSignInAt: Date?
}

/// One page of the admin's user search, newest first.
public struct AdminUserPage: Sendable {
    public let users: [AdminUserView]
    public let next: KeysetCursor?
}

/// The admin's user search: an email substring and typed custom-field values (`field.weight=78`).
public struct UserSearch: Sendable {
    public var emailContains: String?
    /// Field name → the value's text, parsed by the field's type.
    public var fields: [(name: String, value: String)]
    /// Guests only (true), or accounts that are not guests (false); nil: both.
    public var guest: Bool?

    public init(emailContains: String? = nil, fields: [(name: String, value: String)] = [], guest: Bool? = nil) {
        self.emailContains = emailContains
        self.fields = fields
        self.guest = guest
    }
}

/// The lifetimes of the contract: idle 1 hour, absolute 12 hours.
public enum AdminSessionLifetime {
    public static let idleSeconds = 3_600.0
    public static let absoluteSeconds = 43_200.0
    /// How stale the recorded last use may get: the idle limit is exact to this.
    public static let touchSeconds = 60.0
}

/// The SQL of administrators, their sessions, the audit log and the admin's view of users.
enum AdminRepository {
    static let adminColumns = SQLColumns(["id": "a.id", "email": "a.email", "created_at": "a.created_at"])

    static func decodeAdmin(_ row: PostgresRow) throws -> Admin {
        Admin(
            id: try row.decode(UUID.self, "id", of: adminColumns), email: try row.decode(String.self, "email", of: adminColumns),
            createdAt: try row.decode(Date.self, "created_at", of: adminColumns))
    }

    /// The password hash, after `adminColumns`.
    static let passwordHashColumn = adminColumns.followed(by: SQLColumns(["password_hash": "a.password_hash"]))

    static func insert(_ connection: PostgresConnection, email: EmailAddress, passwordHash: String) throws -> Admin? {
        try connection.query(
            """
            INSERT INTO admins AS a (email, email_normalized, password_hash) VALUES (\(email.value), \(email.normalized), \(passwordHash))
            ON CONFLICT (email_normalized) DO NOTHING
            RETURNING \(adminColumns)
            """
        ).first.map(decodeAdmin)
    }

    static func all(_ connection: PostgresConnection) throws -> [Admin] {
        try connection.query("SELECT \(adminColumns) FROM admins a ORDER BY a.created_at, a.id").map(decodeAdmin)
    }

    static func delete(_ connection: PostgresConnection, email: EmailAddress) throws -> Bool {
        try connection.execute("DELETE FROM admins WHERE email_normalized = \(email.normalized)") > 0
    }

    /// Sets the hash and ends every session of the admin; false when there is no such admin.
    static func setPassword(_ connection: PostgresConnection, email: EmailAddress, passwordHash: String) throws -> Bool {
        guard
            let id = try connection.query(
                "UPDATE admins SET password_hash = \(passwordHash) WHERE email_normalized = \(email.normalized) RETURNING id"
            ).first.map({ try $0.decode(UUID.self, at: 0) })
        else { return false }
        try connection.execute("DELETE FROM admin_sessions WHERE admin_id = \(id)")
        return true
    }

    static func find(_ connection: PostgresConnection, id: UUID) throws -> Admin? {
        try connection.query("SELECT \(adminColumns) FROM admins a WHERE a.id = \(id)").first.map(decodeAdmin)
    }

    static func credentials(_ connection: PostgresConnection, email: EmailAddress) throws -> (admin: Admin, passwordHash: String)? {
        try connection.query(
            "SELECT \(adminColumns), \(passwordHashColumn) FROM admins a WHERE a.email_normalized = \(email.normalized)"
        ).first.map { (try decodeAdmin($0), try $0.decode(String.self, "password_hash", of: passwordHashColumn)) }
    }

    /// Whether the administrator of `email` signed in successfully since `since` from one of the
    /// clients `hashes` names (`KnownAdminClient`).
    static func isKnownClient(_ connection: PostgresConnection, email: EmailAddress, hashes: [[UInt8]], since: Date) throws -> Bool {
        guard let first = hashes.first else { return false }
        let second = hashes.count > 1 ? hashes[1] : first
        return try !connection.query(
            """
            SELECT 1 FROM admin_known_clients k JOIN admins a ON a.id = k.admin_id
            WHERE a.email_normalized = \(email.normalized) AND k.client_hash IN (\(first), \(second)) AND k.last_signed_in_at > \(since)
            LIMIT 1
            """
        ).isEmpty
    }

    /// Whether administrator `adminID` signed in successfully since `since` from the client `hash` names.
    static func isKnownClient(_ connection: PostgresConnection, adminID: UUID, hash: [UInt8], since: Date) throws -> Bool {
        try !connection.query(
            """
            SELECT 1 FROM admin_known_clients WHERE admin_id = \(adminID) AND client_hash = \(hash) AND last_signed_in_at > \(since)
            """
        ).isEmpty
    }

    /// Remembers the clients of a successful sign-in at `now`, keeping each administrator's
    /// newest `kept` only.
    static func rememberClients(_ connection: PostgresConnection, adminID: UUID, hashes: [[UInt8]], at now: Date, kept: Int) throws {
        for hash in hashes {
            try connection.execute(
                """
                INSERT INTO admin_known_clients (admin_id, client_hash, last_signed_in_at) VALUES (\(adminID), \(hash), \(now))
                ON CONFLICT (admin_id, client_hash) DO UPDATE SET last_signed_in_at = excluded.last_signed_in_at
                """)
        }
        try connection.execute(
            """
            DELETE FROM admin_known_clients WHERE admin_id = \(adminID) AND client_hash NOT IN (
                SELECT client_hash FROM admin_known_clients WHERE admin_id = \(adminID) ORDER BY last_signed_in_at DESC LIMIT \(kept))
            """)
    }

    /// Opens a session at `now` (its times are the clock's: they are compared with it); returns its end.
    static func openSession(_ connection: PostgresConnection, adminID: UUID, tokenHash: [UInt8], at now: Date) throws -> Date {
        try connection.query(
            """
            INSERT INTO admin_sessions (admin_id, token_hash, created_at, last_seen_at, expires_at)
            VALUES (\(adminID), \(tokenHash), \(now), \(now), \(now) + make_interval(secs => \(AdminSessionLifetime.absoluteSeconds)))
            RETURNING expires_at
            """)[0].decode(Date.self, at: 0)
    }

    /// The admin of a session live at `now` (not idle an hour, not past its end). Its last use is written
    /// when it is a minute old, not on every request: the console's parallel requests, all with one
    /// token, would otherwise queue on the session row's lock and commit.
    static func authenticate(_ connection: PostgresConnection, tokenHash: [UInt8], at now: Date) throws -> Admin? {
        try connection.query(
            """
            WITH live AS (
                SELECT s.id AS session_id, \(adminColumns)
                FROM admin_sessions s JOIN admins a ON a.id = s.admin_id
                WHERE s.token_hash = \(tokenHash) AND s.expires_at > \(now)
                  AND s.last_seen_at > \(now) - make_interval(secs => \(AdminSessionLifetime.idleSeconds))
            ), touched AS (
                UPDATE admin_sessions SET last_seen_at = \(now)
                WHERE id = (SELECT session_id FROM live) AND last_seen_at < \(now) - make_interval(secs => \(AdminSessionLifetime.touchSeconds))
            )
            SELECT id, email, created_at FROM live
            """
        ).first.map(decodeAdmin)
    }

    static func audit(
        _ connection: PostgresConnection, admin: Admin, action: AuditAction, target: UUID?, address: String?
    ) throws {
        try connection.execute(
            """
            INSERT INTO admin_audit (admin_id, admin_email, action, target_user_id, ip_address)
            VALUES (\(admin.id), \(admin.email), \(action.text), \(target), \(address))
            """)
    }

    /// A command run on the server's machine (`exosphere admin …`, `exosphere keys …`): by the
    /// operating-system user who ran it, with no address.
    static func auditCommand(_ connection: PostgresConnection, operator name: String, action: AuditAction) throws {
        try connection.execute(
            """
            INSERT INTO admin_audit (admin_id, admin_email, action, target_user_id, ip_address)
            VALUES (NULL, \("command line (" + String(name.prefix(64)) + ")"), \(action.text), NULL, NULL)
            """)
    }

    /// A failed admin sign-in: the email as typed (at most 254 characters), no administrator.
    static func auditFailedSignIn(_ connection: PostgresConnection, email: String, address: String?) throws {
        try connection.execute(
            """
            INSERT INTO admin_audit (admin_id, admin_email, action, target_user_id, ip_address)
            VALUES (NULL, \(String(email.prefix(254))), \(AuditAction.adminSignInFailed.text), NULL, \(address))
            """)
    }

    static func auditPage(_ connection: PostgresConnection, before id: Int64?, limit: Int) throws -> [AuditEntry] {
        let rows: PostgresRows
        if let id {
            rows = try connection.query(
                """
                SELECT id, at, admin_email, action, target_user_id, ip_address FROM admin_audit
                WHERE id < \(id) ORDER BY id DESC LIMIT \(limit)
                """)
        } else {
            rows = try connection.query(
                "SELECT id, at, admin_email, action, target_user_id, ip_address FROM admin_audit ORDER BY id DESC LIMIT \(limit)")
        }
        return try rows.map { row in
            AuditEntry(
                id: try row.decode(Int64.self, column: "id"), at: try row.decode(Date.self, column: "at"),
                adminEmail: try row.decode(String.self, column: "admin_email"), action: try row.decode(String.self, column: "action"),
                targetUserID: try row.decode(UUID?.self, column: "target_user_id"), ipAddress: try row.decode(String?.self, column: "ip_address"))
        }
    }

    /// The admin's view of users: the user columns, then disabled, sessions, images, last sign-in,
    /// and the exact creation time for the cursor.
    /// A user (`UserRepository.columns`) and what the admin's view adds.
    static let viewColumns = UserRepository.columns.followed(
        by: SQLColumns([
            "disabled": "u.disabled_at IS NOT NULL",
            "session_count": "(SELECT count(*) FROM sessions s WHERE s.user_id = u.id)",
            "image_count": "(SELECT count(*) FROM images i WHERE i.user_id = u.id)",
            "last_sign_in_at": "(SELECT max(s.created_at) FROM sessions s WHERE s.user_id = u.id)",
            "created_micros": "(extract(epoch FROM u.created_at) * 1000000)::int8",
        ]))

    static func decodeView(_ row: PostgresRow) throws -> (AdminUserView, Int64) {
        let view = AdminUserView(
            user: try UserRepository.decode(row), disabled: try row.decode(Bool.self, "disabled", of: viewColumns),
            sessionCount: try row.decode(Int.self, "session_count", of: viewColumns),
            imageCount: try row.decode(Int.self, "image_count", of: viewColumns),
            lastSignInAt: try row.decode(Date?.self, "last_sign_in_at", of: viewColumns))
        return (view, try row.decode(Int64.self, "created_micros", of: viewColumns))
    }

    static func view(_ connection: PostgresConnection, id: UUID) throws -> AdminUserView? {
        try connection.query("SELECT \(UserRepository.columns), \(viewColumns) FROM users u WHERE u.id = \(id)").first.map { try decodeView($0).0 }
    }

    /// Newest first. `containment` is a JSON object every matching user's data contains.
    static func search(
        _ connection: PostgresConnection, emailContains: String?, containment: String?, guest: Bool?, after cursor: KeysetCursor?, limit: Int
    ) throws -> [(AdminUserView, Int64)] {
        // One statement: absent filters are NULL parameters and drop out.
        try connection.query(
            """
            SELECT \(UserRepository.columns), \(viewColumns) FROM users u
            WHERE (\(emailContains)::text IS NULL OR u.email_normalized LIKE '%' || \(emailContains.map(likeEscaped)) || '%')
              AND (\(containment)::jsonb IS NULL OR u.data @> \(containment)::jsonb)
              AND (\(guest)::boolean IS NULL OR u.is_guest = \(guest)::boolean)
              AND (\(cursor?.microseconds)::int8 IS NULL
                   OR (u.created_at, u.id) < ('epoch'::timestamptz + \(cursor?.microseconds) * interval '1 microsecond', \(cursor?.id)))
            ORDER BY u.created_at DESC, u.id DESC
            LIMIT \(limit)
            """
        ).map(decodeView)
    }

    static func likeEscaped(_ text: String) -> String {
        var out = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { out.append("\\") }
            out.append(character)
        }
        return out
    }

    /// Disables (ending every session) or enables; false when there is no such user.
    static func setDisabled(_ connection: PostgresConnection, id: UUID, disabled: Bool) throws -> Bool {
        let changed =
            disabled
            ? try connection.execute("UPDATE users SET disabled_at = coalesce(disabled_at, now()) WHERE id = \(id)")
            : try connection.execute("UPDATE users SET disabled_at = NULL WHERE id = \(id)")
        guard changed > 0 else { return false }
        if disabled { try connection.execute("DELETE FROM sessions WHERE user_id = \(id)") }
        return true
    }

    static func isDisabled(_ connection: PostgresConnection, id: UUID) throws -> Bool {
        try connection.query("SELECT disabled_at IS NOT NULL FROM users WHERE id = \(id)").first?.decode(Bool.self, at: 0) ?? false
    }

    /// Totals, and per UTC day (the last `days`, today included) the users created and the
    /// sign-ins recorded (the activity log keeps 90 days). Both series come from indexes on time.
    static func dashboard(_ connection: PostgresConnection, days: Int) throws -> Dashboard {
        let totals = try connection.query(
            """
            SELECT (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM users WHERE disabled_at IS NOT NULL) AS disabled_users,
                   (SELECT count(*) FROM users WHERE is_guest) AS guests,
                   (SELECT count(*) FROM sessions WHERE expires_at > now()) AS active_sessions, (SELECT count(*) FROM images) AS images
            """)[0]
        let series = try connection.query(
            """
            WITH days AS (
                SELECT generate_series((now() AT TIME ZONE 'UTC')::date - (\(days)::int - 1), (now() AT TIME ZONE 'UTC')::date, interval '1 day')::date AS day
            ), since AS (SELECT (min(day)::timestamp AT TIME ZONE 'UTC') AS at FROM days)
            SELECT to_char(d.day, 'YYYY-MM-DD') AS date, coalesce(u.n, 0) AS sign_ups, coalesce(s.n, 0) AS sign_ins
            FROM days d
            LEFT JOIN (SELECT (created_at AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM users
                       WHERE created_at >= (SELECT at FROM since) GROUP BY 1) u ON u.day = d.day
            LEFT JOIN (SELECT (at AT TIME ZONE 'UTC')::date AS day, count(*) AS n FROM security_events
                       WHERE type = 'signed_in' AND at >= (SELECT at FROM since) GROUP BY 1) s ON s.day = d.day
            ORDER BY d.day
            """)
        return Dashboard(
            users: try totals.decode(Int.self, column: "users"), disabledUsers: try totals.decode(Int.self, column: "disabled_users"),
            guests: try totals.decode(Int.self, column: "guests"),
            activeSessions: try totals.decode(Int.self, column: "active_sessions"), images: try totals.decode(Int.self, column: "images"),
            days: try series.map { row in
                Dashboard.Day(
                    date: try row.decode(String.self, column: "date"), signUps: try row.decode(Int.self, column: "sign_ups"),
                    signIns: try row.decode(Int.self, column: "sign_ins"))
            })
    }
}
