import Accounts
import Cryptography
import FoundationEssentials
import HTTP
import HTTPServer
import Images
import JSON
import Thumbnails

/// The administrators' API (`/admin/`): their sign-in, the user search, a user's detail, edits,
/// sessions, images and activity, the field schema, the dashboard's figures, and the audit log.
/// Every route but the sign-in and the setup needs an admin token, declared with the route; a
/// user's token is `401`, as is an admin's on every user route (admin sessions are another table).
struct AdminController: Controller {
    let accounts: AccountService
    let images: ImageService
    let signer: URLSigner
    /// How image bytes and thumbnails are answered (validators, ranges, the sandbox policy).
    let imageResponses: ImagesController

    static func declare(_ routes: inout Routes<Self>) {
        // As a user's sign-in: its own counters, with the users' rules (the owner rule too); a
        // client that signed in as the email before is not held by the per-email counter.
        routes.open(
            .post, "/admin/signin", body: Self.credentials, throttle: .passwordGuesses(.adminSignIn), hashing: .interactive, use: Self.signIn)
        routes.open(.post, "/admin/setup", .linkToken, hashing: .interactive, use: Self.setup)
        // The second step of an administrator's sign-in with a second factor: wrong codes count
        // per client address (each challenge ends at five).
        routes.open(
            .post, "/admin/signin/mfa", body: Self.finishing, throttle: Throttling(.secondFactorCode, [.perAddress], success: .givesBack()),
            use: Self.finishSignIn)
        routes.admin(.post, "/admin/signout", audit: .change, enrolling: true, use: Self.signOut)
        // Their own second factor: open to their session before it is on (`--admin-mfa required`).
        routes.admin(.get, "/admin/me/mfa", audit: .read(.adminMFARead), enrolling: true, use: Self.ownFactor)
        routes.admin(.post, "/admin/me/mfa/totp", audit: .change, enrolling: true, use: Self.startEnrolment)
        routes.admin(.post, "/admin/me/mfa/totp/confirm", audit: .change, enrolling: true, use: Self.confirmEnrolment)
        routes.admin(.delete, "/admin/users/{id}/mfa", audit: .change, use: Self.resetUserFactor)
        // A read of a user's data is an entry of the audit log, named here; a change audits
        // itself, in its own transaction.
        routes.admin(.get, "/admin/users", audit: .read(.usersSearch), use: Self.users)
        routes.admin(.get, "/admin/users/{id}", audit: .read(.userRead), use: Self.user)
        routes.admin(.patch, "/admin/users/{id}", audit: .change, use: Self.patchUser)
        routes.admin(.delete, "/admin/users/{id}", audit: .change, use: Self.deleteUser)
        routes.admin(.get, "/admin/users/{id}/sessions", audit: .read(.userSessionsRead), use: Self.sessions)
        routes.admin(.delete, "/admin/users/{id}/sessions", audit: .change, use: Self.revokeSessions)
        routes.admin(.delete, "/admin/users/{id}/sessions/{sid}", audit: .change, use: Self.revokeSessions)
        routes.admin(.post, "/admin/users/{id}/password-reset", audit: .change, use: Self.sendPasswordReset)
        routes.admin(.get, "/admin/users/{id}/images", audit: .read(.userImagesRead), use: Self.userImages)
        routes.admin(.get, "/admin/users/{id}/images/{iid}", audit: .read(.userImageRead), use: Self.userImage)
        routes.admin(.get, "/admin/users/{id}/images/{iid}/thumbnail", audit: .read(.userImageRead), use: Self.userThumbnail)
        routes.admin(.get, "/admin/users/{id}/activity", audit: .read(.userActivityRead), use: Self.activity)
        routes.admin(.get, "/admin/users/{id}/sign-in-methods", audit: .read(.userSignInMethodsRead), use: Self.signInMethods)
        routes.admin(.delete, "/admin/users/{id}/passkeys/{passkeyID}", audit: .change, use: Self.removePasskey)
        routes.admin(.delete, "/admin/users/{id}/identities/{identityID}", audit: .change, use: Self.unlinkIdentity)
        routes.admin(.get, "/admin/schema", audit: .read(.schemaRead), use: Self.schema)
        routes.admin(.put, "/admin/schema/{field}", audit: .change, use: Self.pinField)
        routes.admin(.get, "/admin/stats", audit: .read(.statsRead), use: Self.stats)
        routes.admin(.get, "/admin/audit", audit: .read(.auditRead), use: Self.auditLog)
    }

    @Sendable func credentials(_ call: Call) throws -> SignInAttempt {
        let body = try JSONBody.object(call.request)
        guard let email = body["email"]?.stringValue, let password = body["password"]?.stringValue, body.count == 2 else {
            throw AccountsError(.invalidValue, "The body is {\"email\", \"password\"}, both strings.")
        }
        var attempt = SignInAttempt(email: email, password: password)
        attempt.fromKnownClient = try accounts.administrators.isKnownClient(email: email, client: Self.client(call))
        return attempt
    }

    @Sendable func signIn(_ call: Call, _ credentials: SignInAttempt) throws -> Response {
        let issued = try accounts.administrators.adminSignIn(
            email: credentials.email, password: credentials.password, client: Self.client(call), origin: call.origin)
        return Self.signedIn(issued)
    }

    /// The session's answer, and the device cookie when the sign-in made one.
    static func signedIn(_ issued: IssuedAdminSession) -> Response {
        var response = AdminController.sessionResponse(issued)
        if let device = issued.deviceToken {
            // Sent back to the sign-in alone, never readable by a script or sent from another site.
            response.headers.add(
                name: "Set-Cookie",
                value: "\(Self.deviceCookie)=\(device); Path=/admin/signin; Max-Age=\(90 * 86_400); Secure; HttpOnly; SameSite=Strict")
        }
        return response
    }

    @Sendable func finishing(_ call: Call) throws -> SecondFactorController.Finishing {
        let body = RequestBody(object: try JSONBody.object(call.request))
        try body.checkKeys(allowed: ["mfaToken", "code"])
        return SecondFactorController.Finishing(
            token: try body.string("mfaToken", required: true)!, code: try body.string("code", required: true)!, userID: nil)
    }

    @Sendable func finishSignIn(_ call: Call, _ finishing: SecondFactorController.Finishing) throws -> Response {
        let issued = try accounts.administrators.finishAdminSignIn(
            token: finishing.token, code: finishing.code, client: Self.client(call), origin: call.origin)
        return Self.signedIn(issued)
    }

    /// `{"totp": {"enabled"}, "required"}`: the administrator's own factor, and whether the
    /// deployment requires one.
    @Sendable func ownFactor(_ call: Call) throws -> Response {
        let on = try accounts.secondFactor.adminFactorIsOn(call.admin)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("totp")
            writer.beginObject()
            writer.key("enabled"); writer.bool(on)
            writer.endObject()
            writer.key("required"); writer.bool(accounts.configuration.adminSecondFactorRequired)
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func startEnrolment(_ call: Call) throws -> Response {
        SecondFactorController.enrolment(try accounts.secondFactor.startEnrolment(admin: call.admin, origin: call.origin))
    }

    @Sendable func confirmEnrolment(_ call: Call) throws -> Response {
        let body = RequestBody(object: try JSONBody.object(call.request))
        try body.checkKeys(allowed: ["code"])
        let codes = try accounts.secondFactor.confirmEnrolment(admin: call.admin, code: try body.string("code", required: true)!, origin: call.origin)
        return SecondFactorController.recoveryCodes(codes)
    }

    /// A user's second factor turned off (a lost phone and no recovery code): audited, and the
    /// user is told by mail. `204`; `404` when none is on.
    @Sendable func resetUserFactor(_ call: Call) throws -> Response {
        try accounts.secondFactor.disable(userID: try AdminController.userID(call), origin: call.origin, by: call.admin)
        return Response(status: .noContent)
    }

    /// The cookie that names an administrator's device to the sign-in.
    static let deviceCookie = "exo_admin_device"

    /// The sign-in's client: its address, and its device cookie.
    static func client(_ call: Call) -> AdminClient {
        var device: String?
        for field in call.request.headers.values("Cookie") {
            for pair in field.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1).map { $0.filter { $0 != " " && $0 != "\t" } }
                if parts.count == 2, parts[0] == deviceCookie { device = parts[1] }
            }
        }
        return AdminClient(address: call.origin.address, deviceToken: device)
    }

    /// The first administrator, from the one-time link `serve` prints while there is none: the
    /// same answer as a sign-in.
    @Sendable func setup(_ call: Call) throws -> Response {
        let body = try JSONBody.object(call.request)
        guard let token = body["token"]?.stringValue, let email = body["email"]?.stringValue, let password = body["password"]?.stringValue,
            body.count == 3
        else {
            throw AccountsError(.invalidValue, "The body is {\"token\", \"email\", \"password\"}, all strings.")
        }
        let issued = try accounts.administrators.completeAdminSetup(token: token, email: email, password: password, origin: call.origin)
        return AdminController.sessionResponse(issued)
    }

    private static func sessionResponse(_ issued: IssuedAdminSession) -> Response {
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("accessToken"); writer.string(issued.accessToken)
            writer.key("tokenType"); writer.string("Bearer")
            writer.key("expiresAt"); writer.string(UserJSON.timestamp(issued.expiresAt))
            writer.key("admin"); AdminController.write(issued.admin, into: &writer)
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// Ends the admin session of the token: `204`.
    @Sendable func signOut(_ call: Call) throws -> Response {
        let admin = call.admin
        try accounts.administrators.adminSignOut(admin, token: try Authenticator.token(call.request.headers), origin: call.origin)
        return Response(status: .noContent)
    }

    @Sendable func users(_ call: Call) throws -> Response {
        let query = QueryParameters(call.request.query)
        let page = try PageParameters(call.request)
        var search = UserSearch(emailContains: query["q"])
        switch query["guest"] {
        case nil: break
        case "true": search.guest = true
        case "false": search.guest = false
        case let other?: throw AccountsError.field("guest", .invalidValue, "expected true or false, got \(other.prefix(20))")
        }
        for (name, value) in query.all.sorted(by: { $0.key < $1.key }) where name.hasPrefix("field.") {
            search.fields.append((String(name.dropFirst(6)), value))
        }
        let found = try accounts.administration.searchUsers(search, after: page.cursor, limit: page.limit)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("users")
            writer.beginArray()
            for view in found.users { AdminController.write(view, into: &writer) }
            writer.endArray()
            writer.key("next")
            if let next = found.next { writer.string(next.text) } else { writer.null() }
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func user(_ call: Call) throws -> Response {
        return AdminController.response(try accounts.administration.adminView(of: try AdminController.userID(call)))
    }

    /// The profile by the user's own `PATCH` rules (`If-Match` included), and `disabled`:
    /// disabling ends every session of the user at once. Each change is audited.
    @Sendable func patchUser(_ call: Call) async throws -> Response {
        let admin = call.admin
        let id = try AdminController.userID(call)
        var body = try JSONBody.object(call.request, accepting: ["application/merge-patch+json", "application/json"])
        var disabled: Bool?
        if let value = body.removeValue(forKey: "disabled") {
            guard case .bool(let flag) = value else {
                throw AccountsError.invalid([AccountsError.FieldError(field: "disabled", code: .invalidType, detail: "expected boolean")])
            }
            disabled = flag
        }
        // What the admin's view adds to the user is read-only, as the user's own read-only keys are.
        for key in ["sessionCount", "imageCount", "lastSignInAt"] { body.removeValue(forKey: key) }
        let origin = call.origin
        let patch = try AccountBodies.patch(body)
        if patch.email != nil || patch.firstname != nil || patch.lastname != nil || patch.data != nil || patch.removesAllData {
            _ = try await accounts.administration.adminPatchProfile(
                patch, of: id, condition: ETag.condition(call.request.headers["If-Match"]), by: admin, origin: origin)
        }
        if let disabled { try accounts.administration.setDisabled(id, disabled, by: admin, origin: origin) }
        return AdminController.response(try accounts.administration.adminView(of: id))
    }

    /// `204`: the user, their sessions and images (the rows with the user, the files after the commit).
    @Sendable func deleteUser(_ call: Call) throws -> Response {
        let admin = call.admin
        let id = try AdminController.userID(call)
        var files: [UUID] = []
        try accounts.administration.adminDeleteUser(id, by: admin, origin: call.origin) { connection in
            files = try images.deleteAll(userID: id, connection)
        }
        images.removeFiles(files)
        return Response(status: .noContent)
    }

    @Sendable func sessions(_ call: Call) throws -> Response {
        let id = try AdminController.userID(call)
        _ = try accounts.administration.adminView(of: id)
        let sessions = try accounts.sessions.sessions(of: id)
        return JSONBody.response { writer in
            writer.beginObject()
            writer.key("sessions")
            writer.beginArray()
            for session in sessions { UserJSON.writeSessionEntry(session, current: false, into: &writer) }
            writer.endArray()
            writer.endObject()
        }
    }

    /// `DELETE …/sessions` ends every session of the user, `…/sessions/{sid}` one: `204`.
    @Sendable func revokeSessions(_ call: Call) throws -> Response {
        let admin = call.admin
        let id = try AdminController.userID(call)
        var sessionID: UUID?
        if let text = call.parameter("sid") {
            guard let parsed = UUID(uuidString: text) else { throw AccountsError(.notFound, "No such session.") }
            sessionID = parsed
        }
        try accounts.administration.adminRevokeSessions(of: id, sessionID: sessionID, by: admin, origin: call.origin)
        return Response(status: .noContent)
    }

    /// `{"hasPassword", "identities": [...], "passkeys": [...]}`: how the user signs in.
    @Sendable func signInMethods(_ call: Call) throws -> Response {
        let userID = try AdminController.userID(call)
        let (hasPassword, identities, passkeys) = try accounts.signInMethods.signInMethods(of: userID)
        let mfa = try accounts.secondFactor.status(of: userID)
        return JSONBody.response { writer in
            writer.beginObject()
            writer.key("hasPassword"); writer.bool(hasPassword)
            writer.key("mfa"); SecondFactorController.write(mfa, into: &writer)
            writer.key("identities")
            writer.beginArray()
            for identity in identities { IdentitiesController.write(identity, into: &writer) }
            writer.endArray()
            writer.key("passkeys")
            writer.beginArray()
            for passkey in passkeys { PasskeysController.write(passkey, into: &writer) }
            writer.endArray()
            writer.endObject()
        }
    }

    /// `204`; the last way in too (the user gets in again by a password reset).
    @Sendable func removePasskey(_ call: Call) throws -> Response {
        let admin = call.admin
        guard let text = call.parameter("passkeyID"), let id = UUID(uuidString: text) else { throw AccountsError(.notFound, "No such passkey.") }
        try accounts.signInMethods.deletePasskey(id: id, userID: try AdminController.userID(call), origin: call.origin, by: admin)
        return Response(status: .noContent)
    }

    @Sendable func unlinkIdentity(_ call: Call) throws -> Response {
        let admin = call.admin
        guard let text = call.parameter("identityID"), let id = UUID(uuidString: text) else { throw AccountsError(.notFound, "No such identity.") }
        try accounts.signInMethods.unlinkIdentity(id: id, userID: try AdminController.userID(call), origin: call.origin, by: admin)
        return Response(status: .noContent)
    }

    /// `202`: the reset mail is queued, as for `POST /users/password-reset`.
    @Sendable func sendPasswordReset(_ call: Call) throws -> Response {
        let admin = call.admin
        try accounts.administration.adminSendPasswordReset(
            try AdminController.userID(call), by: admin, origin: call.origin)
        return JSONBody.response(.accepted) { writer in
            writer.beginObject()
            writer.key("status"); writer.string("accepted")
            writer.key("detail"); writer.string("A password reset mail is on its way to the user.")
            writer.endObject()
        }
    }

    /// The user's images, oldest first, as the user lists them (with signed URLs for the grid).
    @Sendable func userImages(_ call: Call) throws -> Response {
        let id = try AdminController.userID(call)
        _ = try accounts.administration.adminView(of: id)
        let parameters = try PageParameters(call.request)
        let page = try images.list(userID: id, order: try PageParameters.imageOrder(call.request), after: parameters.cursor, limit: parameters.limit)
        var response = JSONBody.response { ImageJSON.write(page, signer: signer, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// One of the user's images, or `…/thumbnail?size=N`, as the user gets them.
    @Sendable func userImage(_ call: Call) throws -> Response {
        let image = try images.find(try AdminController.imageID(call), userID: try AdminController.userID(call))
        return try imageResponses.serve(image, call.request, cacheControl: "private, max-age=3600")
    }

    @Sendable func userThumbnail(_ call: Call) throws -> Response {
        let spec = try ThumbnailNegotiation.spec(size: QueryParameters(call.request.query)["size"], call.request)
        let thumbnail = try images.thumbnail(try AdminController.imageID(call), userID: try AdminController.userID(call), spec)
        return imageResponses.serve(thumbnail, call.request, cacheControl: "private, max-age=3600")
    }

    /// The user's security events (`GET /users/me/activity` as the user reads it).
    @Sendable func activity(_ call: Call) throws -> Response {
        let id = try AdminController.userID(call)
        _ = try accounts.administration.adminView(of: id)
        let parameters = try PageParameters(call.request)
        let page = try accounts.recovery.activity(userID: id, after: parameters.cursor, limit: parameters.limit)
        var response = JSONBody.response { RecoveryController.write(page, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// `{"fields": {name: {type, pinned, createdAt}}}`.
    @Sendable func schema(_ call: Call) throws -> Response {
        let fields = try accounts.administration.fieldSchema()
        return JSONBody.response { writer in
            writer.beginObject()
            writer.key("fields")
            writer.beginObject()
            for field in fields {
                writer.key(field.name)
                AdminController.write(field, into: &writer)
            }
            writer.endObject()
            writer.endObject()
        }
    }

    /// `{"type": T}`: pins the field's type, converting stored values (`409 schema_conflict` when one does not convert).
    @Sendable func pinField(_ call: Call) throws -> Response {
        let admin = call.admin
        let body = try JSONBody.object(call.request)
        guard body.count == 1, let text = body["type"]?.stringValue, let type = FieldType(rawValue: text) else {
            throw AccountsError.invalid([
                AccountsError.FieldError(
                    field: "type", code: .invalidValue,
                    detail: "the body is {\"type\": T}, T one of " + FieldType.allCases.map(\.rawValue).joined(separator: ", "))
            ])
        }
        let field = try accounts.administration.pinFieldType(call.parameter("field") ?? "", type, by: admin, origin: call.origin)
        return JSONBody.response { writer in
            writer.beginObject()
            writer.key("name"); writer.string(field.name)
            writer.key("type"); writer.string(field.type.rawValue)
            writer.key("pinned"); writer.bool(field.pinned)
            writer.key("createdAt"); writer.string(UserJSON.timestamp(field.createdAt))
            writer.endObject()
        }
    }

    /// The dashboard: totals, and sign-ups and sign-ins per UTC day over the last 30 days.
    @Sendable func stats(_ call: Call) throws -> Response {
        let dashboard = try accounts.administration.dashboard(days: 30)
        var response = JSONBody.response { writer in
            writer.beginObject()
            writer.key("users"); writer.int(dashboard.users)
            writer.key("disabledUsers"); writer.int(dashboard.disabledUsers)
            writer.key("guests"); writer.int(dashboard.guests)
            writer.key("activeSessions"); writer.int(dashboard.activeSessions)
            writer.key("images"); writer.int(dashboard.images)
            writer.key("days")
            writer.beginArray()
            for day in dashboard.days {
                writer.beginObject()
                writer.key("date"); writer.string(day.date)
                writer.key("signUps"); writer.int(day.signUps)
                writer.key("signIns"); writer.int(day.signIns)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
        }
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    @Sendable func auditLog(_ call: Call) throws -> Response {
        let query = QueryParameters(call.request.query)
        let limit = try PageParameters.limit(query)
        var before: Int64?
        if let text = query["after"] {
            guard let value = Int64(text), value > 0 else {
                throw PageParameters.invalidCursor
            }
            before = value
        }
        let page = try accounts.administration.auditPage(before: before, limit: limit)
        return JSONBody.response { writer in
            writer.beginObject()
            writer.key("entries")
            writer.beginArray()
            for entry in page.entries {
                writer.beginObject()
                writer.key("id"); writer.string(String(entry.id))
                writer.key("at"); writer.string(UserJSON.timestamp(entry.at))
                writer.key("adminEmail"); writer.string(entry.adminEmail)
                writer.key("action"); writer.string(entry.action)
                writer.key("targetUserId")
                if let target = entry.targetUserID { writer.string(target.lowercasedText) } else { writer.null() }
                writer.key("ipAddress")
                if let address = entry.ipAddress { writer.string(address) } else { writer.null() }
                writer.endObject()
            }
            writer.endArray()
            writer.key("next")
            if let next = page.next { writer.string(String(next)) } else { writer.null() }
            writer.endObject()
        }
    }

    // MARK: - JSON

    static func write(_ admin: Admin, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id"); writer.string(admin.id.lowercasedText)
        writer.key("email"); writer.string(admin.email)
        writer.endObject()
    }

    /// The user object plus `disabled`, `sessionCount`, `imageCount`, `lastSignInAt`.
    static func write(_ view: AdminUserView, into writer: inout JSONWriter) {
        UserJSON.write(view.user, into: &writer) { writer in
            writer.key("disabled"); writer.bool(view.disabled)
            writer.key("sessionCount"); writer.int(view.sessionCount)
            writer.key("imageCount"); writer.int(view.imageCount)
            writer.key("lastSignInAt")
            if let last = view.lastSignInAt { writer.string(UserJSON.timestamp(last)) } else { writer.null() }
        }
    }

    static func write(_ field: FieldDefinition, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("type"); writer.string(field.type.rawValue)
        writer.key("pinned"); writer.bool(field.pinned)
        writer.key("createdAt"); writer.string(UserJSON.timestamp(field.createdAt))
        writer.endObject()
    }

    /// A user as the admin sees them, with the user's entity tag for `If-Match`.
    static func response(_ view: AdminUserView) -> Response {
        var response = JSONBody.response { AdminController.write(view, into: &$0) }
        response.headers.add(name: "ETag", value: view.user.etag)
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    static func imageID(_ call: Call) throws -> UUID {
        guard let text = call.parameter("iid"), let id = UUID(uuidString: text) else {
            throw ImageError.notFound
        }
        return id
    }

    static func userID(_ call: Call) throws -> UUID {
        guard let text = call.parameter("id"), let id = UUID(uuidString: text) else {
            throw AccountsError(.notFound, "There is no user with this id.")
        }
        return id
    }
}
