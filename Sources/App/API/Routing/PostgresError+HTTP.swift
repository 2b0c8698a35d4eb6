import HTTPServer
import PostgresLoop
import Postgres

/// Database failures a client can do something about: wait and retry.
extension PostgresError: HTTPResponseError {
    public var problem: Problem {
        switch code {
        case .poolTimeout:
            return .serviceUnavailable(code: .databaseBusy, detail: "The database is busy; try again shortly.")
        case .connectionFailed, .poolClosed, .timedOut:
            return .serviceUnavailable(
                code: .databaseUnavailable, detail: "The database is unavailable; try again shortly.",
                retryAfterSeconds: 2)
        default:
            return .internalError
        }
    }
}

/// The worker pool's queue was full when a request answered on an event loop needed it.
extension WorkersBusy: HTTPResponseError {
    public var problem: Problem { .serviceUnavailable() }
}
