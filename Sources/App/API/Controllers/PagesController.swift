import HTTP
import HTTPServer
import JSON

/// The pages that finish a mailed link in a browser (`/reset-password`, `/verify-email`,
/// `/undo-email-change`, `/remove-sign-in-method`), their script and style, and the files that let an app open those links
/// itself.
///
/// The pages read their token from the URL fragment, which no request carries, and run only the
/// scripts served here: the `Content-Security-Policy` allows nothing inline and nothing from
/// another origin, and the pages set no cookie.
struct PagesController: Controller {
    let apps: AppLinks

    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

    static func declare(_ routes: inout Routes<Self>) {
        let files: [(String, String, [UInt8])] = [
            ("/reset-password", "text/html; charset=utf-8", EmbeddedResource.bytes("pages/reset-password.html")),
            ("/verify-email", "text/html; charset=utf-8", EmbeddedResource.bytes("pages/verify-email.html")),
            ("/undo-email-change", "text/html; charset=utf-8", EmbeddedResource.bytes("pages/undo-email-change.html")),
            ("/remove-sign-in-method", "text/html; charset=utf-8", EmbeddedResource.bytes("pages/remove-sign-in-method.html")),
            ("/pages/theme.css", "text/css; charset=utf-8", EmbeddedResource.bytes("pages/theme.css")),
            ("/pages/pages.css", "text/css; charset=utf-8", EmbeddedResource.bytes("pages/pages.css")),
            ("/pages/pages.js", "text/javascript; charset=utf-8", EmbeddedResource.bytes("pages/pages.js")),
            ("/pages/reset-password.js", "text/javascript; charset=utf-8", EmbeddedResource.bytes("pages/reset-password.js")),
            ("/pages/verify-email.js", "text/javascript; charset=utf-8", EmbeddedResource.bytes("pages/verify-email.js")),
            ("/pages/undo-email-change.js", "text/javascript; charset=utf-8", EmbeddedResource.bytes("pages/undo-email-change.js")),
            ("/pages/remove-sign-in-method.js", "text/javascript; charset=utf-8", EmbeddedResource.bytes("pages/remove-sign-in-method.js")),
            // The pages' and the console's icon; at /favicon.ico too, where a browser asks for
            // one on any other page of the origin (the OpenAPI document, an image).
            ("/favicon.svg", "image/svg+xml", EmbeddedResource.bytes("pages/favicon.svg")),
            ("/favicon.ico", "image/svg+xml", EmbeddedResource.bytes("pages/favicon.svg")),
        ]
        for (path, type, body) in files {
            let response = PagesController.page(type, body)
            routes.open(.get, path, execution: .loop) { _ in { _ in response } }
        }
        routes.open(.get, "/.well-known/apple-app-site-association", execution: .loop) { controller in
            let apple = controller.apps.appleAppSiteAssociation.map { PagesController.wellKnown($0) }
            return { _ in
                guard let apple else { throw PagesController.notConfigured("--apple-app-id") }
                return apple
            }
        }
        routes.open(.get, "/.well-known/assetlinks.json", execution: .loop) { controller in
            let android = controller.apps.assetLinks.map { PagesController.wellKnown($0) }
            return { _ in
                guard let android else { throw PagesController.notConfigured("--android-package and --android-cert-sha256") }
                return android
            }
        }
    }

    /// A page file with the pages' policy and headers.
    static func page(_ type: String, _ body: [UInt8], cacheControl: String = "public, max-age=300") -> Response {
        var response = Response(status: .ok, contentType: type, body: body)
        response.headers.add(name: "Content-Security-Policy", value: contentSecurityPolicy)
        response.headers.add(name: "Referrer-Policy", value: "no-referrer")
        response.headers.add(name: "X-Content-Type-Options", value: "nosniff")
        response.headers.add(name: "X-Frame-Options", value: "DENY")
        response.headers.add(name: "Cache-Control", value: cacheControl)
        return response
    }

    private static func wellKnown(_ json: JSONValue) -> Response {
        var response = Response(status: .ok, contentType: "application/json", body: json.serialized())
        response.headers.add(name: "Cache-Control", value: "public, max-age=3600")
        return response
    }

    private static func notConfigured(_ flags: String) -> Problem {
        Problem(status: .notFound, code: .notFound, detail: "No app is configured for this file (\(flags)).")
    }
}

/// The apps that may open this deployment's links themselves (universal links, Android app links).
public struct AppLinks: Sendable, Equatable {
    /// Apple app ids, `TEAMID.bundle.identifier`.
    public var appleAppIDs: [String] = []
    /// The Android app's package name and the SHA-256 fingerprints of its signing certificates.
    public var androidPackage: String?
    public var androidCertificateFingerprints: [String] = []

    public init() {}

    /// The paths of mailed links.
    static let paths = ["/reset-password", "/verify-email", "/undo-email-change", "/remove-sign-in-method"]

    var appleAppSiteAssociation: JSONValue? {
        guard !appleAppIDs.isEmpty else { return nil }
        let ids = JSONValue.array(appleAppIDs.map { .string($0) })
        var detail = JSONObject()
        detail["appIDs"] = ids
        detail["components"] = .array(
            AppLinks.paths.map { path in
                var component = JSONObject()
                component["/"] = .string(path)
                return .object(component)
            })
        var applinks = JSONObject()
        applinks["details"] = .array([.object(detail)])
        var root = JSONObject()
        root["applinks"] = .object(applinks)
        // The same apps may use this server's passkeys (the RP id is this host).
        var webcredentials = JSONObject()
        webcredentials["apps"] = ids
        root["webcredentials"] = .object(webcredentials)
        return .object(root)
    }

    var assetLinks: JSONValue? {
        guard let androidPackage, !androidCertificateFingerprints.isEmpty else { return nil }
        var target = JSONObject()
        target["namespace"] = "android_app"
        target["package_name"] = .string(androidPackage)
        target["sha256_cert_fingerprints"] = .array(androidCertificateFingerprints.map { .string($0) })
        var statement = JSONObject()
        // Mailed links, and this server's passkeys (and passwords) in the app.
        statement["relation"] = .array([
            .string("delegate_permission/common.handle_all_urls"), .string("delegate_permission/common.get_login_creds"),
        ])
        statement["target"] = .object(target)
        return .array([.object(statement)])
    }
}
