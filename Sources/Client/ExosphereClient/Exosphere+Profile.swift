import Foundation

/// The signed-in user's profile and the deployment's field types.
extension Exosphere {
    /// The signed-in user as the server has it now; also `currentUser` from then on.
    ///
    /// Sent with `If-None-Match` naming the copy the client holds: when nothing changed the
    /// server answers `304` with no body, and that copy is returned as it is.
    public func fetchUser() async throws -> User {
        let token = try accessToken()
        let held = currentUser
        var request = APIRequest("GET", "/users/me")
        if let etag = held?.etag { request.headers["If-None-Match"] = etag }
        let response = try await send(request, token: token)
        if response.status == 304, let held { return held }
        guard response.status == 200 else { throw ExosphereError.invalidResponse("GET /users/me answered \(response.status)") }
        let user = try User(json: try response.json(), etag: response.header("ETag"))
        remember(user, readWith: token)
        return user
    }

    /// Saves what changed in `user` since it was read (a JSON Merge Patch of those fields only),
    /// on the condition that the server's copy is still the one `user` was read from.
    ///
    /// - Returns: the saved user, also `currentUser` from now on; `user` itself when nothing changed.
    /// - Throws: `ExosphereError`; when someone else saved first, `412 precondition_failed`
    ///   (`isConflict`) with the server's copy in `serverCopy`: show it, or save
    ///   `user.rebased(onto: serverCopy)` to apply these changes on top of it. Also `409
    ///   email_taken`, `422 invalid_type` and `invalid_value` with `fieldErrors`.
    @discardableResult
    public func save(_ user: User) async throws -> User {
        guard let patch = user.mergePatch else { return user }
        let token = try accessToken()
        guard user.id == currentUser?.id else {
            // A patch computed from another account's copy must not be applied to this one.
            throw ExosphereError(code: .invalidArgument, detail: "This user is not the signed-in user.")
        }
        var etag = user.etag
        if etag == nil {
            // A copy from sign-in or registration carries no ETag: read the current one, and
            // the copy it belongs to must be the one `user` was read from.
            let current = try await fetchUser()
            guard current.original == user.original, current.updatedAt == user.updatedAt else {
                throw ExosphereError(
                    status: 412, code: .preconditionFailed,
                    detail: "The profile changed on the server since it was read.", serverCopy: current)
            }
            etag = current.etag
        }
        var request = APIRequest("PATCH", "/users/me", body: .json(patch, contentType: "application/merge-patch+json"))
        if let etag { request.headers["If-Match"] = etag }
        let response: APIResponse
        do {
            response = try await send(request, token: token)
        } catch let error as ExosphereError where error.status == 412 {
            let current = try await fetchUser()
            throw ExosphereError(status: 412, code: error.code, detail: error.detail, serverCopy: current)
        }
        let saved = try User(json: try response.json(), etag: response.header("ETag"))
        remember(saved, readWith: token)
        return saved
    }

    /// The type of every custom field the deployment knows, by name.
    public func schema() async throws -> [String: FieldType] {
        let (response, _) = try await sendSignedIn(APIRequest("GET", "/users/schema"))
        guard let fields = try response.json()["fields"]?.objectValue else {
            throw ExosphereError.invalidResponse("a schema without fields")
        }
        return fields.compactMapValues { $0.stringValue.map(FieldType.init(rawValue:)) }
    }
}
