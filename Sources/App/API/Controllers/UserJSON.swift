import Accounts
import FoundationEssentials
import JSON

/// The JSON representations of the contract: user, session body, session list entry.
enum UserJSON {
    /// `more` adds members after the user's own (the admin's view adds four).
    static func write(_ user: User, into writer: inout JSONWriter, more: (inout JSONWriter) -> Void = { _ in }) {
        writer.beginObject()
        writer.key("id"); writer.string(user.id.lowercasedText)
        writer.key("email"); if let email = user.email { writer.string(email) } else { writer.null() }
        writer.key("firstname"); writer.string(user.firstname)
        writer.key("lastname"); writer.string(user.lastname)
        writer.key("emailVerified"); writer.bool(user.emailVerified)
        writer.key("pendingEmail"); if let pending = user.pendingEmail { writer.string(pending) } else { writer.null() }
        writer.key("isGuest"); writer.bool(user.isGuest)
        writer.key("createdAt"); writer.string(timestamp(user.createdAt))
        writer.key("updatedAt"); writer.string(timestamp(user.updatedAt))
        writer.key("data"); writer.value(.object(user.data))
        more(&writer)
        writer.endObject()
    }

    /// `{"accessToken", "tokenType", "expiresAt", "user"}`, plus extra members written by `more`.
    static func writeSession(_ issued: IssuedSession, into writer: inout JSONWriter, more: (inout JSONWriter) -> Void = { _ in }) {
        writer.beginObject()
        writer.key("accessToken"); writer.string(issued.accessToken)
        writer.key("tokenType"); writer.string("Bearer")
        writer.key("expiresAt"); writer.string(timestamp(issued.session.expiresAt))
        writer.key("user"); write(issued.user, into: &writer)
        more(&writer)
        writer.endObject()
    }

    /// `{"password", "passkeys", "identities"}`: the ways into an account
    /// (`GET /users/me/sign-in-methods`, and the answer of a password reset).
    static func writeSignInMethods(
        hasPassword: Bool, identities: [LinkedIdentity], passkeys: [Passkey], mfa: SecondFactor.Status, into writer: inout JSONWriter
    ) {
        writer.beginObject()
        writer.key("password"); writer.bool(hasPassword)
        writer.key("passkeys")
        writer.beginArray()
        for passkey in passkeys { PasskeysController.write(passkey, into: &writer) }
        writer.endArray()
        writer.key("identities")
        writer.beginArray()
        for identity in identities { IdentitiesController.write(identity, into: &writer) }
        writer.endArray()
        writer.key("mfa")
        SecondFactorController.write(mfa, into: &writer)
        writer.endObject()
    }

    static func writeSessionEntry(_ session: Session, current: Bool, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id"); writer.string(session.id.lowercasedText)
        writer.key("createdAt"); writer.string(timestamp(session.createdAt))
        writer.key("lastSeenAt"); writer.string(timestamp(session.lastSeenAt))
        writer.key("expiresAt"); writer.string(timestamp(session.expiresAt))
        writer.key("authenticatedAt"); writer.string(timestamp(session.authenticatedAt))
        writer.key("userAgent")
        if let agent = session.userAgent { writer.string(agent) } else { writer.null() }
        writer.key("current"); writer.bool(current)
        writer.endObject()
    }

    /// RFC 3339 UTC with milliseconds.
    static func timestamp(_ date: Date) -> String {
        RFC3339.format(millisecondsSinceEpoch: Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
    }
}
