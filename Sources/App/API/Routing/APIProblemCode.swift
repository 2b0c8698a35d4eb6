import HTTP
import HTTPServer
import JSON

/// The stable codes the API's routes answer with themselves, one case each (the server's own are
/// `ProblemCode`; a domain's, such as `AccountsError.Code`, are enums of their own).
enum APIProblemCode: String, Sendable, CaseIterable {
    // Bodies.
    case unsupportedMediaType = "unsupported_media_type"
    case bodyTooLarge = "body_too_large"
    case tooDeep = "too_deep"
    // Pages of a list: `?limit=` and `?after=`.
    case invalidLimit = "invalid_limit"
    case invalidCursor = "invalid_cursor"
    // Images.
    case invalidSignature = "invalid_signature"
    case rangeNotSatisfiable = "range_not_satisfiable"
    case thumbnailsUnavailable = "thumbnails_unavailable"
    case imageStoreUnavailable = "image_store_unavailable"
    // The database.
    case notReady = "not_ready"
    case databaseBusy = "database_busy"
    case databaseUnavailable = "database_unavailable"
    // Exports and live events.
    case exportTooLarge = "export_too_large"
    case eventsUnavailable = "events_unavailable"
    case invalidLastEventID = "invalid_last_event_id"
    case tooManyStreams = "too_many_streams"
}

extension Problem {
    init(status: HTTPStatus, code: APIProblemCode, detail: String, errors: [FieldError] = [], headers: HTTPHeaders = HTTPHeaders()) {
        self.init(status: status, domainCode: code, detail: detail, errors: errors, headers: headers)
    }

    /// `503` with one of the API's codes and `Retry-After`.
    static func serviceUnavailable(
        code: APIProblemCode, detail: String = "The server is overloaded; try again shortly.", retryAfterSeconds: Int = 1
    ) -> Problem {
        serviceUnavailable(domainCode: code, detail: detail, retryAfterSeconds: retryAfterSeconds)
    }
}
