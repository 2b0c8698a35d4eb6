import Cryptography
import FoundationEssentials
import Outbox
import Postgres
import Time

/// What a change to an account mails, written in the change's own transaction: the links that
/// verify an address, confirm a change of address or undo one, the notices to the account's
/// address, and the links each change voids. The tokens of the links are made as the mail is sent
/// (`mintMailToken`).
public struct AccountMail: Sendable {
    let context: AccountsContext

    /// Voids the user's older verification links, makes the slot of the new one bound to the
    /// current address, and queues its mail (whose sender makes the token: `mintMailToken`).
    func queueVerification(_ connection: PostgresConnection, user: User) throws {
        guard let email = user.email.flatMap(EmailAddress.init) else { return }
        try AccountTokenRepository.deleteAll(connection, userID: user.id, purposes: [.emailVerification])
        let slot = try AccountTokenRepository.insertSlot(
            connection, userID: user.id, purpose: .emailVerification, email: email,
            lifetimeSeconds: context.configuration.verificationTokenSeconds, at: context.clock.now())
        // No name: the address is not proven yet, so the mail carries no text its requester chose
        // (a name could otherwise make it a message to a stranger's mailbox).
        try OutboxRepository.enqueue(
            connection, OutgoingMail(.verifyEmail, to: email.value, [OutgoingMail.tokenSlotVariable: String(slot), "email": email.value]))
    }

    /// After a password change or reset: older reset links die, the event is recorded, and the
    /// account's address gets a notice.
    func passwordChanged(_ connection: PostgresConnection, user: User, _ kind: ActivityEvent.Kind, origin: RequestOrigin) throws {
        try AccountTokenRepository.deleteAll(connection, userID: user.id, purposes: [.passwordReset])
        if let email = user.email { try AccountTokenRepository.deletePendingResets(connection, email: EmailAddress.normalized(email)) }
        try ActivityRepository.record(connection, userID: user.id, kind, origin: origin)
        try OutboxRepository.enqueue(connection, .notice(.passwordChanged, to: user))
    }

    /// After a way in was added: the account's address (verified: the routes that add one
    /// require it) gets a notice with a link that removes it and ends every session. `method`
    /// names it; `chosenMethod`, with text the user chose (a passkey's name), replaces it for a
    /// verified address.
    func wayInAdded(
        _ connection: PostgresConnection, user: User, method: String, chosenMethod: String? = nil, _ target: AccountTokenRepository.Target
    ) throws {
        // A guest has no address to tell: the way in is its first.
        guard user.email != nil else { return }
        let slot = try AccountTokenRepository.insertSlot(
            connection, userID: user.id, purpose: .signInMethodRemoval, target: target,
            lifetimeSeconds: context.configuration.signInMethodRemovalSeconds, at: context.clock.now())
        try OutboxRepository.enqueue(
            connection,
            .notice(
                .signInMethodAdded, to: user, [OutgoingMail.tokenSlotVariable: String(slot), "method": method],
                chosen: chosenMethod.map { ["method": $0] } ?? [:]))
    }

    /// A change of address asked for by the user (the route counts it per user and per target
    /// address): `409` when the address is taken; then the address is pending (replacing an earlier
    /// one, whose link dies) and its mailbox gets the link that applies it. Returns the user.
    func requestEmailChange(_ connection: PostgresConnection, user: User, to email: EmailAddress, origin: RequestOrigin) throws -> User {
        if try UserRepository.exists(connection, email: email) { throw AccountsError.emailTaken }
        try AccountTokenRepository.deleteAll(connection, userID: user.id, purposes: [.emailChange])
        let slot = try AccountTokenRepository.insertSlot(
            connection, userID: user.id, purpose: .emailChange, email: email, lifetimeSeconds: context.configuration.verificationTokenSeconds,
            at: context.clock.now())
        // No name: the address is not proven, so the mail carries no text its requester chose.
        try OutboxRepository.enqueue(
            connection, OutgoingMail(.confirmEmailChange, to: email.value, [OutgoingMail.tokenSlotVariable: String(slot), "email": email.value]))
        return try UserRepository.setPendingEmail(
            connection, id: user.id, email: email, lifetimeSeconds: context.configuration.verificationTokenSeconds)
    }

    /// After a confirmed change of address: links sent to the old one die, and the old one gets a
    /// notice with the link that puts it back.
    func emailChangeApplied(_ connection: PostgresConnection, from old: User, to new: User, origin: RequestOrigin) throws {
        try AccountTokenRepository.deleteAll(connection, userID: new.id, purposes: [.passwordReset, .emailVerification])
        if let email = old.email { try AccountTokenRepository.deletePendingResets(connection, email: EmailAddress.normalized(email)) }
        try ActivityRepository.record(connection, userID: new.id, .emailChanged, origin: origin)
        // A guest's first address has nothing to undo.
        guard let oldAddress = old.email.flatMap(EmailAddress.init) else { return }
        let slot = try AccountTokenRepository.insertSlot(
            connection, userID: new.id, purpose: .emailChangeUndo, email: oldAddress, lifetimeSeconds: context.configuration.emailChangeUndoSeconds,
            at: context.clock.now())
        try OutboxRepository.enqueue(
            connection,
            .notice(
                .emailChangeApplied, to: oldAddress.value, verified: old.emailVerified, firstname: new.firstname,
                [OutgoingMail.tokenSlotVariable: String(slot), "newEmail": new.email ?? ""]))
    }

    /// After an administrator's change of address: links sent to the old one die, the new one
    /// gets a verification link and the old one a notice.
    func addressChanged(_ connection: PostgresConnection, from old: User, to new: User, origin: RequestOrigin) throws {
        try AccountTokenRepository.deleteAll(connection, userID: new.id, purposes: [.passwordReset, .emailChange])
        try ActivityRepository.record(connection, userID: new.id, .emailChanged, origin: origin)
        if let oldEmail = old.email {
            try AccountTokenRepository.deletePendingResets(connection, email: EmailAddress.normalized(oldEmail))
            try OutboxRepository.enqueue(
                connection, .notice(.emailChanged, to: oldEmail, verified: old.emailVerified, firstname: new.firstname, ["newEmail": new.email ?? ""])
            )
        }
        try queueVerification(connection, user: new)
    }

    /// The token of a queued mail's link, made as the mail is sent: its hash goes into the
    /// mail's slot and is committed before this returns; nil when the slot is gone (the link
    /// was used or voided meanwhile: the mail is not worth sending). A retry makes a new one,
    /// and the token of the earlier attempt stops working. The slot must be live at `clock`'s now.
    public static func mintMailToken(slot: Int64, on pool: PostgresPool, clock: WallClock) throws -> String? {
        let token = try SessionToken.generate()
        let minted = try pool.withConnection { try AccountTokenRepository.mint($0, slot: slot, hash: token.hash, at: clock.now()) }
        return minted ? token.text : nil
    }
}

extension OutgoingMail {
    /// A notice about an account to `address`. Text the account's holder chose (the first name, a
    /// passkey's name: `chosen`) goes only to an address its mailbox proved; an unverified address
    /// may be a stranger's, whose inbox must not carry what a registrant wrote. Without its first
    /// name a mail greets the address itself.
    static func notice(
        _ kind: MailKind, to address: String, verified: Bool, firstname: String, _ variables: [String: String] = [:],
        chosen: [String: String] = [:]
    ) -> OutgoingMail {
        var values = variables
        values["email"] = address
        if verified {
            values["firstname"] = firstname
            values.merge(chosen) { _, chosen in chosen }
        }
        return OutgoingMail(kind, to: address, values)
    }

    /// A notice to `user`'s own address; nil for an account without one.
    static func notice(_ kind: MailKind, to user: User, _ variables: [String: String] = [:], chosen: [String: String] = [:]) -> OutgoingMail? {
        user.email.map { notice(kind, to: $0, verified: user.emailVerified, firstname: user.firstname, variables, chosen: chosen) }
    }
}

extension OutboxRepository {
    /// Queues `mail`, if there is one: a notice to an account without an address goes nowhere.
    static func enqueue(_ connection: PostgresConnection, _ mail: OutgoingMail?) throws {
        if let mail { try enqueue(connection, mail) }
    }
}
