import HTTP
import HTTPServer

/// `GET /openapi.json`: the OpenAPI document, a constant encoded once and served on the event loop.
struct OpenAPIController: Controller {
    private static let body = OpenAPIDocument.bytes

    static func declare(_ routes: inout Routes<Self>) {
        routes.open(.get, "/openapi.json", execution: .loop) { _ in
            { _ in Response(status: .ok, contentType: "application/json", body: OpenAPIController.body) }
        }
    }
}
