import HTTP
import HTTPServer

/// `GET /openapi.json`: the OpenAPI document, a constant encoded once and served on the event loop.
struct OpenAPIController {
    private static let body = OpenAPIDocument.bytes

    func register(in router: inout Router) {
        router.get("/openapi.json", execution: .inline) { _, _ in
            Response(status: .ok, contentType: "application/json", body: OpenAPIController.body)
        }
    }
}
