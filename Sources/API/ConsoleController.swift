import HTTP
import HTTPServer

/// The administrators' console at `/console/`: one page, its style and script, embedded in the
/// binary. It runs only these files (the `Content-Security-Policy` allows nothing inline and
/// nothing from another origin), keeps the admin token in the tab's `sessionStorage` and sends
/// it as a bearer token: no cookie, so nothing another site could make the browser send.
struct ConsoleController: Sendable {
    func register(in router: inout Router) {
        let files: [(String, String, [UInt8])] = [
            ("/console/", "text/html; charset=utf-8", PackageResources.index_html),
            ("/console/console.css", "text/css; charset=utf-8", PackageResources.console_css),
            ("/console/console.js", "text/javascript; charset=utf-8", PackageResources.console_js),
        ]
        for (path, type, body) in files {
            var response = Response(status: .ok, contentType: type, body: body)
            response.headers.add(name: "Content-Security-Policy", value: PagesController.contentSecurityPolicy)
            response.headers.add(name: "Referrer-Policy", value: "no-referrer")
            response.headers.add(name: "X-Content-Type-Options", value: "nosniff")
            response.headers.add(name: "X-Frame-Options", value: "DENY")
            // A new release's console is seen at once: revalidated every time (ETag-less, so refetched; small).
            response.headers.add(name: "Cache-Control", value: "no-cache")
            router.get(path, execution: .inline) { [response] _, _ in response }
        }
        var redirect = Response(status: .movedPermanently)
        redirect.headers.add(name: "Location", value: "/console/")
        router.get("/console", execution: .inline) { [redirect] _, _ in redirect }
    }
}
