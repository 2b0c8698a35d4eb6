import FoundationEssentials
import JSON
import Postgres

/// The SQL of users; every value is a bound parameter.
enum UserRepository {
    /// What a user row is selected and read by.
    static let columns = SQLColumns([
        "id": "u.id", "email": "u.email", "firstname": "u.firstname", "lastname": "u.lastname",
        "email_verified": "u.email_verified", "created_at": "u.created_at", "updated_at": "u.updated_at",
        "data": "u.data::text", "version": "u.version",
        "pending_email": "CASE WHEN u.pending_email_expires_at > now() THEN u.pending_email END", "is_guest": "u.is_guest",
    ])

    /// The columns of `columns`, found once: a user is read on every authenticated request.
    private enum Column {
        static let id = columns.column("id"), email = columns.column("email"), firstname = columns.column("firstname")
        static let lastname = columns.column("lastname"), emailVerified = columns.column("email_verified")
        static let createdAt = columns.column("created_at"), updatedAt = columns.column("updated_at"), data = columns.column("data")
        static let version = columns.column("version"), pendingEmail = columns.column("pending_email")
        static let isGuest = columns.column("is_guest")
    }

    /// Reads a user selected by `columns` (`UserRepository.columns`, or where it follows another
    /// list in the row).
    static func decode(_ row: PostgresRow, _ columns: SQLColumns = columns) throws -> User {
        let dataText = try row.decode(String.self, Column.data, of: columns)
        let data: JSONObject
        do {
            // Doubles are stored as plain decimals (see `storageText`), up to ~330 characters long.
            let stored = try JSONParser.parse(dataText, limits: JSONLimits(maxDepth: 4, maxBytes: 1 << 22, maxNumberLength: 400))
            data = (stored.objectValue ?? JSONObject()).withShortestDoubles
        } catch {
            throw PostgresError(code: .decodingFailed, columnName: "data", context: "stored data is not a JSON object")
        }
        return User(
            id: try row.decode(UUID.self, Column.id, of: columns), email: try row.decode(String?.self, Column.email, of: columns),
            firstname: try row.decode(String.self, Column.firstname, of: columns),
            lastname: try row.decode(String.self, Column.lastname, of: columns),
            emailVerified: try row.decode(Bool.self, Column.emailVerified, of: columns),
            createdAt: try row.decode(Date.self, Column.createdAt, of: columns),
            updatedAt: try row.decode(Date.self, Column.updatedAt, of: columns), data: data,
            version: try row.decode(Int64.self, Column.version, of: columns),
            pendingEmail: try row.decode(String?.self, Column.pendingEmail, of: columns),
            isGuest: try row.decode(Bool.self, Column.isGuest, of: columns))
    }

    static func insert(
        _ connection: PostgresConnection, email: EmailAddress, passwordHash: String, firstname: String,
        lastname: String, data: JSONObject
    ) throws -> User {
        let rows = try connection.query(
            """
            INSERT INTO users AS u (email, email_normalized, password_hash, firstname, lastname, data)
            VALUES (\(email.value), \(email.normalized), \(passwordHash), \(firstname), \(lastname), \(PostgresJSON(data.storageText))::jsonb)
            RETURNING \(columns)
            """)
        return try decode(rows[0])
    }

    /// A guest: no address, no password.
    static func insertGuest(_ connection: PostgresConnection, firstname: String, lastname: String, data: JSONObject) throws -> User {
        let rows = try connection.query(
            """
            INSERT INTO users AS u (email, email_normalized, password_hash, firstname, lastname, data, is_guest)
            VALUES (NULL, NULL, \(noPassword), \(firstname), \(lastname), \(PostgresJSON(data.storageText))::jsonb, true)
            RETURNING \(columns)
            """)
        return try decode(rows[0])
    }

    /// An account made by a code mailed to an address no account held (`--email-code-signup`):
    /// the address verified by the code, no password.
    static func insertByMailbox(_ connection: PostgresConnection, email: EmailAddress) throws -> User {
        let rows = try connection.query(
            """
            INSERT INTO users AS u (email, email_normalized, password_hash, email_verified)
            VALUES (\(email.value), \(email.normalized), \(noPassword), true)
            RETURNING \(columns)
            """)
        return try decode(rows[0])
    }

    static func find(_ connection: PostgresConnection, id: UUID, forUpdate: Bool = false) throws -> User? {
        let rows = try connection.query("SELECT \(columns) FROM users u WHERE u.id = \(id) \(unsafeRaw: forUpdate ? "FOR UPDATE" : "")")
        return try rows.first.map { try decode($0) }
    }

    /// The `password_hash` of an account without a password (made by a provider's sign-in): no
    /// PHC string, so no password verifies against it.
    static let noPassword = "!"

    static func find(_ connection: PostgresConnection, email: EmailAddress) throws -> User? {
        try connection.query("SELECT \(columns) FROM users u WHERE u.email_normalized = \(email.normalized)").first.map { try decode($0) }
    }

    /// The id and password hash of the user with this login email.
    static func credentials(_ connection: PostgresConnection, email: EmailAddress) throws -> (id: UUID, passwordHash: String)? {
        let rows = try connection.query("SELECT id, password_hash FROM users WHERE email_normalized = \(email.normalized)")
        return try rows.first.map { (try $0.decode(UUID.self, column: "id"), try $0.decode(String.self, column: "password_hash")) }
    }

    /// Whether a user has this login email.
    static func exists(_ connection: PostgresConnection, email: EmailAddress) throws -> Bool {
        try !connection.query("SELECT 1 FROM users WHERE email_normalized = \(email.normalized)").isEmpty
    }

    /// The user, if their password hash is still `hash`, with the row locked until the transaction
    /// ends: shared (a session may be opened, while a password change waits), or for an update of
    /// the hash. No row when the hash changed (or the user went) since it was read.
    static func find(_ connection: PostgresConnection, id: UUID, passwordHash hash: String, forUpdate: Bool) throws -> User? {
        let rows = try connection.query(
            """
            SELECT \(columns) FROM users u WHERE u.id = \(id) AND u.password_hash = \(hash)
            \(unsafeRaw: forUpdate ? "FOR NO KEY UPDATE" : "FOR SHARE")
            """)
        return try rows.first.map { try decode($0) }
    }

    static func passwordHash(_ connection: PostgresConnection, id: UUID, forUpdate: Bool = false) throws -> String? {
        let rows = try connection.query("SELECT password_hash FROM users WHERE id = \(id) \(unsafeRaw: forUpdate ? "FOR UPDATE" : "")")
        return try rows.first.map { try $0.decode(String.self, at: 0) }
    }

    /// Replaces the editable fields and bumps the version if the version is still
    /// `expectedVersion` (any version when nil); an email change resets verification. Returns the
    /// user, or no row when the version moved on (or the user is gone).
    /// Without `emailMayChange` the statement updates nothing when the stored email differs from
    /// `email`: a change of address must go through the transaction that mails both addresses.
    /// `cancelsPendingEmail` (the request wrote the current address back) ends a pending change:
    /// its link stops working, since it confirms only the pending address.
    /// `email` nil: the account has no address (a guest), and keeps none.
    static func replace(
        _ user: User, email: EmailAddress?, expectedVersion: Int64?, emailMayChange: Bool, cancelsPendingEmail: Bool
    ) -> PreparedQuery<User> {
        var binds = PostgresBindings()
        binds.append(user.id)
        if let email {
            binds.append(email.value)
            binds.append(email.normalized)
        } else {
            binds.appendNull(type: .text)
            binds.appendNull(type: .text)
        }
        binds.append(user.firstname)
        binds.append(user.lastname)
        binds.append(PostgresJSON(user.data.storageText))
        // Typed even when NULL: the statement keeps the types of its first run.
        if let expectedVersion { binds.append(expectedVersion) } else { binds.appendNull(type: .int8) }
        binds.append(emailMayChange)
        binds.append(cancelsPendingEmail || emailMayChange)
        return PreparedQuery(replaceStatement, binds) { try decode($0) }
    }

    private static let replaceStatement = PostgresStatement(
        unsafeSQL: """
            UPDATE users AS u SET email = $2, email_normalized = $3,
                email_verified = CASE WHEN u.email_normalized IS NOT DISTINCT FROM $3 THEN u.email_verified ELSE false END,
                firstname = $4, lastname = $5, data = $6, version = u.version + 1, updated_at = now(),
                pending_email = CASE WHEN $9 THEN NULL ELSE u.pending_email END,
                pending_email_expires_at = CASE WHEN $9 THEN NULL ELSE u.pending_email_expires_at END
            WHERE u.id = $1 AND ($7::bigint IS NULL OR u.version = $7) AND ($8::boolean OR u.email_normalized IS NOT DISTINCT FROM $3)
            RETURNING \(columns.sql)
            """)

    /// Runs a statement that gives a user an address: another account holding it (the unique
    /// index on `email_normalized`) is `409 email_taken`.
    static func claimingAddress<T>(_ statement: () throws -> T) throws -> T {
        do {
            return try statement()
        } catch let error as PostgresError where error.sqlState == .uniqueViolation {
            throw AccountsError.emailTaken
        }
    }

    /// Marks the user's address verified if it is still `emailNormalized`; nil when it is not.
    static func markVerified(_ connection: PostgresConnection, id: UUID, emailNormalized: String) throws -> User? {
        let rows = try connection.query(
            """
            UPDATE users AS u SET email_verified = true, version = u.version + 1, updated_at = now()
            WHERE u.id = \(id) AND u.email_normalized = \(emailNormalized)
            RETURNING \(columns)
            """)
        return try rows.first.map { try decode($0) }
    }

    /// Makes `email` the user's pending address for `lifetimeSeconds`, replacing any earlier one.
    static func setPendingEmail(_ connection: PostgresConnection, id: UUID, email: EmailAddress, lifetimeSeconds: Double) throws -> User {
        let rows = try connection.query(
            """
            UPDATE users AS u SET pending_email = \(email.value),
                pending_email_expires_at = now() + make_interval(secs => \(lifetimeSeconds)),
                version = u.version + 1, updated_at = now()
            WHERE u.id = \(id)
            RETURNING \(columns)
            """)
        return try decode(rows[0])
    }

    /// Moves the user to their pending address, verified (a link mailed to it came back), if it
    /// is still pending; nil when it is not. A taken address is the unique violation of
    /// `email_normalized`.
    static func applyPendingEmail(_ connection: PostgresConnection, id: UUID, email: EmailAddress) throws -> User? {
        let rows = try connection.query(
            """
            UPDATE users AS u SET email = \(email.value), email_normalized = \(email.normalized), email_verified = true,
                pending_email = NULL, pending_email_expires_at = NULL, version = u.version + 1, updated_at = now()
            WHERE u.id = \(id) AND u.pending_email = \(email.value) AND u.pending_email_expires_at > now()
            RETURNING \(columns)
            """)
        return try rows.first.map { try decode($0) }
    }

    /// Puts an address back (an undo link mailed to it came back, so it is verified), ending any
    /// pending change. A taken address is the unique violation of `email_normalized`.
    static func restoreEmail(_ connection: PostgresConnection, id: UUID, email: EmailAddress) throws -> User? {
        let rows = try connection.query(
            """
            UPDATE users AS u SET email = \(email.value), email_normalized = \(email.normalized), email_verified = true,
                pending_email = NULL, pending_email_expires_at = NULL, version = u.version + 1, updated_at = now()
            WHERE u.id = \(id)
            RETURNING \(columns)
            """)
        return try rows.first.map { try decode($0) }
    }

    /// Replaces the custom fields alone (a new version, so clients' entity tags go stale).
    static func setData(_ connection: PostgresConnection, id: UUID, data: JSONObject) throws {
        try connection.execute(
            "UPDATE users SET data = \(PostgresJSON(data.storageText))::jsonb, version = version + 1, updated_at = now() WHERE id = \(id)")
    }

    static func setPasswordHash(_ connection: PostgresConnection, id: UUID, hash: String) throws {
        try connection.execute("UPDATE users SET password_hash = \(hash), version = version + 1, updated_at = now() WHERE id = \(id)")
    }

    /// Replaces a hash only if it is still the one that was verified (an upgrade must not undo a change).
    static func upgradePasswordHash(_ connection: PostgresConnection, id: UUID, from old: String, to new: String) throws {
        try connection.execute("UPDATE users SET password_hash = \(new) WHERE id = \(id) AND password_hash = \(old)")
    }

    static func delete(_ connection: PostgresConnection, id: UUID) throws -> Bool {
        try connection.execute("DELETE FROM users WHERE id = \(id)") > 0
    }
}

extension JSONObject {
    /// Compact JSON text.
    var jsonText: String { JSONValue.object(self).serializedString() }

    /// JSON text for the `jsonb` column. jsonb keeps numbers as `numeric` and prints them without an
    /// exponent, so the double `1e+16` would come back as the integer literal `10000000000000000`
    /// (and `1e+300` as 301 digits). Writing every double as a plain decimal with a fraction keeps
    /// its scale, hence its type, through the round trip.
    var storageText: String {
        var copy = self
        for (key, value) in self {
            if case .number(let number) = value, !number.isInteger, let plain = JSONNumber(literal: number.plainDecimalText) {
                copy[key] = .number(plain)
            }
        }
        return copy.jsonText
    }

    /// The object with every non-integer number in its shortest form again (`1e+16`, `2.5`).
    var withShortestDoubles: JSONObject {
        var copy = self
        for (key, value) in self {
            if case .number(let number) = value, !number.isInteger, !number.isShortestPlainDecimal,
                let double = number.doubleValue, let shortest = JSONNumber(double)
            {
                copy[key] = .number(shortest)
            }
        }
        return copy
    }
}

extension JSONNumber {
    /// Whether the literal is a plain decimal that `JSONNumber(Double)` would write the same way,
    /// decided from the text alone (every stored double is read back on every profile read):
    /// `-?(0|[1-9][0-9]*)\.[0-9]+` with at most 15 digits, so it names its double exactly and
    /// no shorter text does, no trailing zero in the fraction unless it is the single `.0` of an
    /// integral value, and at least 0.0001 in magnitude, below which Swift writes an exponent.
    /// Anything else (`0.10`, `1e+16`, `0.00001`) is left to the full conversion.
    var isShortestPlainDecimal: Bool {
        var text = text
        return text.withUTF8 { utf8 in
            var index = 0
            if index < utf8.count, utf8[index] == UInt8(ascii: "-") { index += 1 }
            let integerStart = index
            while index < utf8.count, utf8[index] >= UInt8(ascii: "0"), utf8[index] <= UInt8(ascii: "9") { index += 1 }
            let integerDigits = index - integerStart
            guard integerDigits > 0, index < utf8.count, utf8[index] == UInt8(ascii: ".") else { return false }
            let integerIsZero = utf8[integerStart] == UInt8(ascii: "0")
            guard !integerIsZero || integerDigits == 1 else { return false }
            index += 1
            let fractionStart = index
            while index < utf8.count, utf8[index] >= UInt8(ascii: "0"), utf8[index] <= UInt8(ascii: "9") { index += 1 }
            let fractionDigits = index - fractionStart
            guard index == utf8.count, fractionDigits > 0, (integerIsZero ? 0 : integerDigits) + fractionDigits <= 15 else { return false }
            if utf8[index - 1] == UInt8(ascii: "0") {
                // Only the `.0` of an integral value, which Swift writes too (`70.0`, `0.0`, `-0.0`).
                return fractionDigits == 1
            }
            if integerIsZero {
                var zeros = 0
                while utf8[fractionStart + zeros] == UInt8(ascii: "0") { zeros += 1 }
                return zeros <= 3
            }
            return true
        }
    }

    /// The literal without an exponent and with a fraction: `1.5e+3` → `1500.0`, `2e-3` → `0.002`.
    var plainDecimalText: String {
        var text = Substring(self.text)
        guard let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) else { return self.text }
        guard let exponent = Int(text[text.index(after: e)...].drop { $0 == "+" }) else { return self.text }
        text = text[..<e]
        let negative = text.first == "-"
        if negative { text = text.dropFirst() }
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        var digits = String(parts[0]) + (parts.count > 1 ? String(parts[1]) : "")
        var point = parts[0].count + exponent
        while digits.count > 1, digits.first == "0" {  // leading zeros move the point
            digits.removeFirst()
            point -= 1
        }
        let result: String
        if point <= 0 {
            result = "0." + String(repeating: "0", count: -point) + digits
        } else if point >= digits.count {
            result = digits + String(repeating: "0", count: point - digits.count) + ".0"
        } else {
            result = String(digits.prefix(point)) + "." + String(digits.dropFirst(point))
        }
        return (negative ? "-" : "") + result
    }
}
