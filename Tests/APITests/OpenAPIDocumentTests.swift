import Accounts
@testable import API
import HTTP
@testable import HTTPServer
import JSON
import StructuredLogging
import Postgres
import Cryptography
import Images
import TestSupport
import Testing
import Thumbnails

/// The OpenAPI document: JSON our parser accepts, OpenAPI 3.1, exactly the routes the server
/// registers, every `$ref` resolvable, and every stable error code under the status that carries it.
@Suite(.testThreads) struct OpenAPIDocumentTests {
    let document: JSONValue

    init() throws {
        document = try JSONParser.parse(OpenAPIDocument.json)
    }

    @Test func isOpenAPI31() throws {
        let version = try #require(document["openapi"]?.stringValue)
        #expect(version.hasPrefix("3.1."))
        #expect(document["info"]?["version"]?.stringValue == Application.version)
        #expect(document["info"]?["title"]?.stringValue == "Exosphere")
        #expect(document["components"]?["securitySchemes"]?["bearer"]?["scheme"]?.stringValue == "bearer")
        for name in ["User", "SessionBody", "SessionList", "FieldTypes", "Problem", "Image", "ImagePage"] {
            #expect(document["components"]?["schemas"]?[name]?.objectValue != nil, "components.schemas.\(name)")
        }
    }

    /// The document's operations are exactly `Application.routes`, built on a pool that never connects.
    @Test func describesExactlyTheRouteTable() throws {
        let router = try Self.withRouter { $0 }
        let registered = Set(router.routes.map { "\($0.method.rawValue) \($0.pattern)" })
        #expect(registered.count == router.routes.count, "a route is registered twice")
        #expect(documentedOperations() == registered)
    }

    @Test func servesTheDocument() async throws {
        let router = try Self.withRouter { $0 }
        guard case .found(let route, _) = router.match(method: .get, path: "/openapi.json") else {
            Issue.record("GET /openapi.json is not routed")
            return
        }
        #expect(route.execution == .loop)
        let response = try await route.handler(
            Request(head: RequestHead(method: .get, target: "/openapi.json")),
            RequestContext(requestID: "test"))
        #expect(response.status == .ok)
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(response.body == Array(OpenAPIDocument.json.utf8))
    }

    @Test func everyReferenceResolves() {
        var references: [String] = []
        Self.collectReferences(in: document, into: &references)
        #expect(!references.isEmpty)
        for reference in references {
            #expect(resolve(reference) != nil, "\(reference) does not resolve")
        }
    }

    @Test func protectedOperationsNeedABearerTokenAndAnswer401() {
        for (path, method, operation) in operations() {
            guard operation["security"] != nil else { continue }
            let scheme = path.hasPrefix("/admin/") ? "adminBearer" : "bearer"
            #expect(operation["security"]?[0]?[scheme] != nil, "\(method) \(path)")
            let unauthorized = operation["responses"]?["401"]
            #expect(unauthorized?["$ref"]?.stringValue == "#/components/responses/Unauthorized", "\(method) \(path)")
        }
        let unauthenticated = Set(operations().filter { $0.operation["security"] == nil }.map { "\($0.method) \($0.path)" })
        #expect(
            unauthenticated == [
                "GET /healthz", "GET /readyz", "GET /metrics", "GET /openapi.json", "POST /users", "POST /users/signin",
                "POST /users/password-reset", "POST /users/password-reset/confirm", "POST /users/verify-email",
                "POST /users/email-change/undo", "GET /reset-password", "GET /verify-email", "GET /undo-email-change",
                "GET /pages/undo-email-change.js", "POST /users/sign-in-methods/remove", "GET /remove-sign-in-method",
                "GET /pages/remove-sign-in-method.js", "GET /pages/theme.css", "GET /pages/pages.css", "GET /pages/pages.js",
                "GET /pages/reset-password.js",
                "GET /pages/verify-email.js", "GET /favicon.svg", "GET /favicon.ico", "GET /.well-known/apple-app-site-association",
                "GET /.well-known/assetlinks.json", "GET /images/{id}",
                "POST /admin/signin", "POST /admin/signin/mfa", "POST /admin/setup", "GET /console", "GET /console/", "GET /console/console.css",
                "GET /console/console.js",
                "POST /users/signin/apple", "POST /users/signin/google", "POST /users/signin/nonce", "POST /users/signin/passkey/options",
                "POST /users/signin/passkey", "POST /users/signin/mfa", "POST /users/guest", "POST /users/signin/email-code",
                "POST /users/signin/email-code/verify",
            ])
    }

    /// Each code the domain, the JSON body reader and the database mapping can answer with is
    /// listed under the status the implementation gives it.
    @Test func everyErrorCodeIsListedUnderItsStatus() throws {
        // Every code of the domain but `cancelled`, which answers a client that has gone.
        var problems = AccountsError.Code.allCases.filter { $0 != .cancelled }.map { AccountsError($0, "").problem }
        // The database's codes that are not the server's own failure (those are `500 internal_error`).
        problems += PostgresError.Code.allCases.map { PostgresError(code: $0).problem }.filter { $0.status != .internalServerError }
        problems += [
            Problem.serviceUnavailable(),
            Problem(status: .unsupportedMediaType, code: .unsupportedMediaType, detail: ""),
            Problem(status: .unprocessableContent, code: .tooDeep, detail: ""),
            Problem(status: .contentTooLarge, code: .bodyTooLarge, detail: ""),
            Problem.serviceUnavailable(code: .notReady),
        ]
        // Images: the domain's codes, the multipart reader's, and the controller's own.
        let imageCodes = ImageError.Code.allCases
        problems += imageCodes.map { ImageError($0, "").problem }
        // `invalid_boundary` is left out: the controller answers a multipart type without a valid boundary with 415.
        problems += [MultipartError.malformed, .partHeadTooLarge, .tooManyParts, .noFilePart, .multipleFileParts].map(\.problem)
        problems += [
            ImagesController.unsupportedType(""),
            ImageError(.tooLarge, "").problem,
            PageParameters.invalidLimit,
            PageParameters.invalidCursor,
            Problem(status: .rangeNotSatisfiable, code: .rangeNotSatisfiable, detail: ""),
            ThumbnailsUnavailable("").problem,
        ]
        let listed = listedCodes()
        for problem in problems {
            #expect(listed[problem.status.code, default: []].contains(problem.code), "\(problem.status.code) \(problem.code)")
        }
        // The problem body's headers are documented where the implementation sends them.
        #expect(AccountsError(.missingToken, "").problem.headers["WWW-Authenticate"] == "Bearer")
        #expect(AccountsError(.tooManyAttempts, "", retryAfterSeconds: 3).problem.headers["Retry-After"] == "3")
    }

    /// The HTTP layer's codes are in the description's table, and the 400 ones in `BadRequest`.
    @Test func everyHTTPParseCodeIsDocumented() throws {
        let description = try #require(document["info"]?["description"]?.stringValue)
        for code in HTTPParseError.Code.allCases.map(\.rawValue) + ["method_not_allowed", "method_not_implemented", "internal_error"] {
            #expect(description.contains("`\(code)`"), "\(code)")
        }
        let errors: [HTTPParseError] = [
            .invalidRequestLine, .invalidMethod, .invalidTarget, .invalidVersion, .bareLF, .bareCR, .obsFold, .whitespaceBeforeColon,
            .invalidFieldName, .invalidFieldValue, .missingHost, .duplicateHost, .invalidHost, .duplicateContentLength,
            .invalidContentLength, .contentLengthWithTransferEncoding, .chunkedNotFinal, .transferEncodingInHTTP10,
            .invalidChunkSize, .chunkSizeOverflow, .invalidChunkExtension, .chunkExtensionTooLong, .invalidChunkTerminator, .invalidTrailer,
        ]
        let badRequest = Set(codes(of: document["components"]?["responses"]?["BadRequest"]))
        for error in errors {
            #expect(error.status == .badRequest, "\(error.code)")
            #expect(badRequest.contains(error.code.rawValue), "\(error.code)")
        }
    }

    @Test func errorResponsesAreProblemDocuments() {
        for (path, method, operation) in operations() {
            for (status, response) in operation["responses"]?.objectValue ?? JSONObject() {
                let resolved = resolveResponse(response)
                let content = resolved?["content"]?.objectValue
                if status.hasPrefix("4") || status.hasPrefix("5") || status == "default" {
                    #expect(content?.keys == ["application/problem+json"], "\(method) \(path) \(status)")
                } else if let content, path == "/users/me/export" {
                    #expect(content.keys == ["application/zip"], "\(method) \(path) \(status)")
                } else if let content, path == "/users/me/events" {
                    #expect(content.keys == ["text/event-stream"], "\(method) \(path) \(status)")
                } else if let content, path == "/metrics" {
                    #expect(content.keys == ["text/plain; version=0.0.4; charset=utf-8"], "\(method) \(path) \(status)")
                } else if let content,
                    ["/reset-password", "/verify-email", "/undo-email-change", "/remove-sign-in-method", "/console/"].contains(path)
                {
                    #expect(content.keys == ["text/html"], "\(method) \(path) \(status)")
                } else if let content, path.hasPrefix("/favicon.") {
                    #expect(content.keys == ["image/svg+xml"], "\(method) \(path) \(status)")
                } else if let content, path.hasPrefix("/pages/") || path.hasPrefix("/console/") {
                    #expect(content.keys == [path.hasSuffix(".css") ? "text/css" : "text/javascript"], "\(method) \(path) \(status)")
                } else if let content, path == "/users/me/images/{id}" || path == "/images/{id}" || path == "/admin/users/{id}/images/{iid}" {
                    #expect(Set(content.keys) == Set(ImageFormat.allCases.map(\.mimeType)), "\(method) \(path) \(status)")
                } else if let content, path.hasSuffix("/thumbnail") {
                    #expect(Set(content.keys) == Set(ThumbnailFormat.allCases.map(\.mimeType)), "\(method) \(path) \(status)")
                } else if let content {
                    #expect(content.keys == ["application/json"], "\(method) \(path) \(status)")
                }
                #expect(resolved?["headers"]?["X-Request-Id"] != nil, "\(method) \(path) \(status): X-Request-Id")
            }
        }
    }

    /// An upload takes each image type as a raw body, and multipart/form-data.
    @Test func uploadAcceptsTheImageTypesAndMultipart() {
        let content = document["paths"]?["/users/me/images"]?["post"]?["requestBody"]?["content"]?.objectValue
        #expect(Set(content?.keys ?? []) == Set(ImageFormat.allCases.map(\.mimeType) + ["multipart/form-data"]))
    }

    @Test func patchAcceptsMergePatchAndJSON() {
        let content = document["paths"]?["/users/me"]?["patch"]?["requestBody"]?["content"]?.objectValue
        #expect(content?.keys == ["application/merge-patch+json", "application/json"])
    }

    // MARK: - Helpers

    private static let methods = ["get", "put", "post", "delete", "options", "head", "patch", "trace"]

    private func operations() -> [(path: String, method: String, operation: JSONValue)] {
        var result: [(String, String, JSONValue)] = []
        for (path, item) in document["paths"]?.objectValue ?? JSONObject() {
            for (method, operation) in item.objectValue ?? JSONObject() where Self.methods.contains(method) {
                result.append((path, method.uppercased(), operation))
            }
        }
        return result
    }

    private func documentedOperations() -> Set<String> {
        Set(operations().map { "\($0.method) \($0.path)" })
    }

    /// Status → the codes some response with that status lists.
    private func listedCodes() -> [Int: Set<String>] {
        var result: [Int: Set<String>] = [:]
        for (_, _, operation) in operations() {
            for (status, response) in operation["responses"]?.objectValue ?? JSONObject() {
                guard let status = Int(status) else { continue }
                result[status, default: []].formUnion(codes(of: response))
            }
        }
        return result
    }

    private func codes(of response: JSONValue?) -> [String] {
        let schema = response.flatMap(resolveResponse)?["content"]?["application/problem+json"]?["schema"]
        return schema?["properties"]?["code"]?["enum"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    private func resolveResponse(_ response: JSONValue) -> JSONValue? {
        if let reference = response["$ref"]?.stringValue { return resolve(reference) }
        return response
    }

    /// A local JSON pointer (`#/components/schemas/User`).
    private func resolve(_ reference: String) -> JSONValue? {
        guard reference.hasPrefix("#/") else { return nil }
        var value: JSONValue? = document
        for token in reference.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let key = String(token).replacing("~1", with: "/").replacing("~0", with: "~")
            value = value?[key]
        }
        return value
    }

    private static func collectReferences(in value: JSONValue, into references: inout [String]) {
        switch value {
        case .object(let object):
            for (key, member) in object {
                if key == "$ref", let reference = member.stringValue { references.append(reference) }
                collectReferences(in: member, into: &references)
            }
        case .array(let elements):
            for element in elements { collectReferences(in: element, into: &references) }
        default:
            break
        }
    }

    /// `Application.routes` on a database that is never contacted: the pool connects on demand.
    private static func withRouter<T>(_ body: (Router) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.databaseURL = "host=/nonexistent port=1 dbname=openapi_tests"
        let database = try Database.start(configuration, logger: .silent, migrate: false)
        let hashing = HashingPool(workers: 1)
        defer {
            hashing.shutdown()
            database.shutdown()
        }
        let accounts = AccountService(pool: database.pool, hasher: PasswordHasher(), hashing: hashing, logger: .silent)
        defer { accounts.shutdown() }
        let images = ImageService(pool: database.pool, configuration: configuration.images, logger: .silent)
        return try body(
            Application.routes(
                database: database, accounts: accounts, images: images, signer: URLSigner(pool: database.pool, lifetimeSeconds: 3600),
                metrics: MetricsController(listing: database.pool)))
    }
}
