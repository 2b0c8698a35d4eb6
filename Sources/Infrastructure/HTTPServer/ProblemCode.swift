/// The stable codes the server answers with itself, one case each: what HTTP alone decides (no
/// route, no method, no capacity, a failed handler). The application's codes (`APIProblemCode`)
/// and each domain's (`AccountsError.Code`, `ImageError.Code`, `HTTPParseError.Code`) are enums of
/// their own, and `Problem` takes only such typed codes, never a string.
public enum ProblemCode: String, Sendable, CaseIterable {
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case methodNotImplemented = "method_not_implemented"
    case internalError = "internal_error"
    case overloaded
}
