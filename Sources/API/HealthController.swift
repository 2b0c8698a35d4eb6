import HTTP
import HTTPServer

/// `GET /healthz` (the process serves) and `GET /readyz` (the database answers and is migrated).
struct HealthController {
    private static let okBody = Array(#"{"status":"ok"}"#.utf8)
    private static let readyBody = Array(#"{"status":"ready"}"#.utf8)

    let database: Database

    func register(in routes: inout RouteTable) {
        routes.open(.get, "/healthz", execution: .loop) { _ in
            Response(status: .ok, contentType: "application/json", body: HealthController.okBody)
        }
        routes.open(.get, "/readyz") { [database] _ in
            guard database.isReady() else {
                throw Problem.serviceUnavailable(
                    code: .notReady, detail: "The database is unreachable or not migrated.",
                    retryAfterSeconds: 5)
            }
            return Response(status: .ok, contentType: "application/json", body: HealthController.readyBody)
        }
    }
}
