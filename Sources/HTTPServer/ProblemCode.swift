/// The stable codes the server and its routes answer with themselves, one case each; a domain's
/// own codes (`AccountsError.Code`, `ImageError.Code`, `HTTPParseError.Code`) are enums of their
/// own, and `Problem` takes only such typed codes, never a string.
public enum ProblemCode: String, Sendable, CaseIterable {
    // The server's.
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case methodNotImplemented = "method_not_implemented"
    case internalError = "internal_error"
    case overloaded
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
    // The database.
    case notReady = "not_ready"
    case databaseBusy = "database_busy"
    case databaseUnavailable = "database_unavailable"
    // Exports and live events.
    case exportTooLarge = "export_too_large"
    case eventsUnavailable = "events_unavailable"
    case invalidLastEventID = "invalid_last_event_id"
}
