import FoundationEssentials
import JSON
import Postgres

/// A user's profile: the names, the address and the custom fields, replaced or patched on the
/// version read or on any, and the field types.
public final class Profiles: Sendable {
    private let context: AccountsContext
    private let mail: AccountMail

    init(context: AccountsContext, mail: AccountMail) {
        self.context = context
        self.mail = mail
    }

    /// `PUT /users/me`: replaces the editable representation. Without a condition the write does
    /// not depend on what is stored (last write wins). An account with an address must name one;
    /// a guest may name none.
    public func replaceProfile(
        _ replacement: ProfileReplacement, of user: User, condition: WriteCondition, origin: RequestOrigin,
        on executor: some QueryExecutor
    ) async throws -> User {
        try context.schema.checkFieldCount(replacement.data.count)
        if replacement.email == nil, user.email != nil { throw AccountsError.field("email", .invalidValue, "is required") }
        return try await writeProfile(
            of: user, condition: condition, dependsOnStored: false, naming: replacement.email, addressChange: .confirmed, origin: origin,
            on: executor
        ) { user, validate in
            user.firstname = replacement.firstname
            user.lastname = replacement.lastname
            user.data = JSONObject()
            guard let fields = try validate(Array(replacement.data)) else { return false }
            FieldSchema.apply(fields, to: &user.data)
            return true
        }
    }

    /// How a write that names another address moves the account there.
    public enum AddressChange: Sendable {
        /// Pending until a link mailed to the new address comes back (a bearer token is no proof).
        case confirmed
        /// At once: an administrator's edit, which is the operator's proof.
        case atOnce
    }

    /// `PATCH /users/me`: merges the patch into the stored user.
    public func patchProfile(
        _ patch: ProfilePatch, of user: User, condition: WriteCondition, addressChange: AddressChange = .confirmed, origin: RequestOrigin,
        on executor: some QueryExecutor
    ) async throws -> User {
        // More names than a user may hold can never be valid: refused before any of them is looked up or claimed.
        try context.schema.checkFieldCount(patch.data?.count ?? 0)
        return try await writeProfile(
            of: user, condition: condition, dependsOnStored: true, naming: patch.email, addressChange: addressChange, origin: origin,
            on: executor
        ) { [self] user, validate in
            if let firstname = patch.firstname { user.firstname = firstname }
            if let lastname = patch.lastname { user.lastname = lastname }
            if patch.removesAllData { user.data = JSONObject() }
            if let data = patch.data, !patch.removesAllData {
                guard let fields = try validate(Array(data)) else { return false }
                FieldSchema.apply(fields, to: &user.data)
            }
            try context.schema.checkFieldCount(user.data.count)
            return true
        }
    }

    /// Checks custom fields (nil values remove a field) and returns them in canonical form; nil
    /// when a field's type is not known yet.
    private typealias FieldValidation = ([(String, JSONValue)]) throws -> [(String, JSONValue)]?

    /// A profile write: `edit` changes a copy of the user (false when a custom field's type is
    /// not known yet), and one `UPDATE` writes it on the condition that the row still has the
    /// version read, or, when the change `dependsOnStored` nothing and any version is allowed,
    /// unconditionally. When that statement finds the row changed, or a field's type is new
    /// (claiming it must commit or roll back with the write), a transaction locks the row and
    /// edits what it holds. A write `naming` another address always takes the transaction: it
    /// mails the new address (a link that confirms it, or, `atOnce`, one that verifies it and a
    /// notice to the old one). A write naming the current address ends a pending change.
    private func writeProfile(
        of current: User, condition: WriteCondition, dependsOnStored: Bool, naming named: EmailAddress?, addressChange: AddressChange,
        origin: RequestOrigin, on executor: some QueryExecutor,
        edit: @escaping (inout User, FieldValidation) throws -> Bool
    ) async throws -> User {
        guard condition.allows(current) else { throw Profiles.stale }
        var user = current
        let namesEmail = named != nil
        if try edit(&user, context.schema.validateCached), named == nil || Self.holds(current, named) {
            try context.schema.checkDocumentSize(user)
            let unconditional = condition == .any && !dependsOnStored
            let update = UserRepository.replace(
                user, email: try named ?? storedAddress(current), expectedVersion: unconditional ? nil : current.version, emailMayChange: false,
                cancelsPendingEmail: namesEmail)
            do {
                if let written = try await executor.write(update, lockOrder: current.id.lowercasedText).first { return written }
            } catch {
                throw Profiles.emailTakenError(error)
            }
            // The user (or their address) changed since it was read: edit what is stored now.
        }
        let written: (user: User, mailed: Bool)
        do {
            written = try await executor.transaction { [self] connection in
                guard var user = try UserRepository.find(connection, id: current.id, forUpdate: true) else {
                    throw AccountsError(.invalidToken, "The user no longer exists.")
                }
                guard condition.allows(user) else { throw Profiles.stale }
                let stored = user
                _ = try edit(&user) { try context.schema.validate($0, connection) }
                try context.schema.checkDocumentSize(user)
                let storedEmail = try storedAddress(stored)
                guard let named, !Self.holds(stored, named) else {
                    let replace = UserRepository.replace(
                        user, email: named ?? storedEmail, expectedVersion: nil, emailMayChange: false, cancelsPendingEmail: namesEmail)
                    return (try connection.query(replace)[0], false)
                }
                switch addressChange {
                case .atOnce:
                    let replace = UserRepository.replace(user, email: named, expectedVersion: nil, emailMayChange: true, cancelsPendingEmail: true)
                    let updated = try connection.query(replace)[0]
                    try mail.addressChanged(connection, from: stored, to: updated, origin: origin)
                    return (updated, true)
                case .confirmed:
                    // Every other field is saved now; the address waits for its proof.
                    let replace = UserRepository.replace(
                        user, email: storedEmail, expectedVersion: nil, emailMayChange: false, cancelsPendingEmail: false)
                    let updated = try connection.query(replace)[0]
                    return (try mail.requestEmailChange(connection, user: updated, to: named, origin: origin), true)
                }
            }
        } catch {
            throw Profiles.emailTakenError(error)
        }
        if written.mailed {
            context.mailQueued()
            if written.user.pendingEmail != nil {
                SecurityEvent.log(context.logger, .emailChangeRequested, outcome: .success, userID: written.user.id, origin: origin)
            }
        }
        return written.user
    }

    /// Whether `user`'s address is `email`.
    private static func holds(_ user: User, _ email: EmailAddress?) -> Bool {
        user.email.map(EmailAddress.normalized) == email?.normalized
    }

    private static let stale = AccountsError(.preconditionFailed, "The user changed since it was read (If-Match is stale).")

    private static func emailTakenError(_ error: any Error) -> any Error {
        if let error = error as? PostgresError, error.sqlState == .uniqueViolation { return AccountsError.emailTaken }
        return error
    }

    /// `GET /users/schema`.
    public func fieldTypes() throws -> [String: FieldType] {
        try context.pool.withConnection { try context.schema.all($0) }
    }

    /// The stored address, nil when the account has none.
    private func storedAddress(_ user: User) throws(AccountsError) -> EmailAddress? {
        guard let text = user.email else { return nil }
        guard let email = EmailAddress(text) else { throw .field("email", .invalidEmail, "is not a valid email address") }
        return email
    }
}
