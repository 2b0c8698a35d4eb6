import HTTP
import HTTPServer

/// `GET /healthz`: the process is up and serving.
struct HealthController {
    private static let okBody = Array(#"{"status":"ok"}"#.utf8)

    func register(in router: inout Router) {
        router.get("/healthz", execution: .inline) { _, _ in
            Response(status: .ok, contentType: "application/json", body: HealthController.okBody)
        }
    }
}
