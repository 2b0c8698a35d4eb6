import HTTP
import HTTPServer

/// `GET /openapi.json`: the OpenAPI document, a constant encoded once and served on the event loop.
struct OpenAPIController {
    private static let body = OpenAPIDocument.bytes

    func register(in routes: inout RouteTable) {
        routes.open(.get, "/openapi.json", execution: .loop) { _ in
            Response(status: .ok, contentType: "application/json", body: OpenAPIController.body)
        }
    }
}
