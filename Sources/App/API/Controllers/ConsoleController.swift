import HTTP
import HTTPServer

/// The administrators' console at `/console/`: one page, its style and script, embedded in the
/// binary. It runs only these files (the `Content-Security-Policy` allows nothing inline and
/// nothing from another origin), keeps the admin token in the tab's `sessionStorage` and sends
/// it as a bearer token: no cookie, so nothing another site could make the browser send. (The one
/// cookie, `exo_admin_device`, only tells the sign-in a device it saw sign in before; it is
/// `HttpOnly`, `SameSite=Strict` and sent to `/admin/signin` alone.)
struct ConsoleController: Controller {
    static func declare(_ routes: inout Routes<Self>) {
        let files: [(String, String, [UInt8])] = [
            ("/console/", "text/html; charset=utf-8", EmbeddedResource.bytes("console/index.html")),
            ("/console/console.css", "text/css; charset=utf-8", EmbeddedResource.bytes("console/console.css")),
            ("/console/console.js", "text/javascript; charset=utf-8", EmbeddedResource.bytes("console/console.js")),
        ]
        for (path, type, body) in files {
            // A new release's console is seen at once: fetched again every time (small, and no validator).
            let response = PagesController.page(type, body, cacheControl: "no-cache")
            routes.open(.get, path, execution: .loop) { _ in { _ in response } }
        }
        var redirect = Response(status: .movedPermanently)
        redirect.headers.add(name: "Location", value: "/console/")
        routes.open(.get, "/console", execution: .loop) { [redirect] _ in { _ in redirect } }
    }
}
