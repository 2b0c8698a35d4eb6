import HTTP
import HTTPServer
import Images

/// `GET /healthz` (the process serves) and `GET /readyz` (the database answers and is migrated,
/// and the image store, when images go to one, answers for its bucket).
struct HealthController: Controller {
    private static let okBody = Array(#"{"status":"ok"}"#.utf8)
    private static let readyBody = Array(#"{"status":"ready"}"#.utf8)

    let database: Database
    let images: ImageService

    static func declare(_ routes: inout Routes<Self>) {
        routes.open(.get, "/healthz", execution: .loop) { _ in
            { _ in Response(status: .ok, contentType: "application/json", body: HealthController.okBody) }
        }
        routes.open(.get, "/readyz", use: Self.ready)
    }

    @Sendable func ready(_ call: Call) throws -> Response {
        guard database.isReady() else {
            throw Problem.serviceUnavailable(code: .notReady, detail: "The database is unreachable or not migrated.", retryAfterSeconds: 5)
        }
        if images.configuration.storage == .s3 {
            do {
                try images.checkObjectStore()
            } catch {
                throw Problem.serviceUnavailable(code: .notReady, detail: "The image store is unreachable.", retryAfterSeconds: 5)
            }
        }
        return Response(status: .ok, contentType: "application/json", body: HealthController.readyBody)
    }
}
