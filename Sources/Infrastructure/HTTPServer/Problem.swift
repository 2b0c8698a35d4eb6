import HTTP
import JSON

/// An RFC 9457 problem document, thrown by handlers and sent as `application/problem+json`.
public struct Problem: Error, Sendable, HTTPResponseError, CustomStringConvertible {
    /// One invalid field of a request, for `422` answers.
    public typealias FieldError = JSON.FieldError<String>

    public var status: HTTPStatus
    /// Stable, machine-readable: clients switch on it.
    public var code: String
    /// For people; never holds secrets, SQL or stack traces.
    public var detail: String
    public var errors: [FieldError]
    /// Extra response headers, such as `Allow`, `Retry-After` or `WWW-Authenticate`.
    public var headers: HTTPHeaders
    /// Members of the problem document beyond RFC 9457's, in order (`mfaToken`, `factors`).
    public var members: [(name: String, value: Member)] = []

    /// The value of an extension member.
    public enum Member: Sendable {
        case string(String)
        case strings([String])
    }

    public init(status: HTTPStatus, code: ProblemCode, detail: String, errors: [FieldError] = [], headers: HTTPHeaders = HTTPHeaders()) {
        self.init(status: status, domainCode: code, detail: detail, errors: errors, headers: headers)
    }

    /// A problem with a domain's own code (`AccountsError.Code`, `ImageError.Code`, …): typed, as
    /// every code is; no problem is made from a string.
    public init<Code: RawRepresentable<String>>(
        status: HTTPStatus, domainCode code: Code, detail: String, errors: [FieldError] = [], headers: HTTPHeaders = HTTPHeaders()
    ) {
        self.status = status
        self.code = code.rawValue
        self.detail = detail
        self.errors = errors
        self.headers = headers
    }

    /// The most field errors a response lists; the rest are only counted (`errorCount`), so that
    /// a 1 MiB body of invalid fields cannot make a many-times larger answer.
    public static let maxListedErrors = 20
    /// The longest field name or detail echoed, in Unicode scalars: a field name is the client's
    /// own key, and may be a megabyte long.
    static let maxEchoedLength = 256

    public var problem: Problem { self }
    public var description: String { "\(status.code) \(code)" }

    /// The response carrying this problem.
    public func response() -> Response {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("type"); writer.string("about:blank")
        writer.key("title"); writer.string(status.reasonPhrase)
        writer.key("status"); writer.int(status.code)
        writer.key("code"); writer.string(code)
        writer.key("detail"); writer.string(Problem.bounded(detail))
        if !errors.isEmpty {
            writer.key("errors")
            writer.beginArray()
            for error in errors.prefix(Problem.maxListedErrors) {
                writer.beginObject()
                writer.key("field"); writer.string(Problem.bounded(error.field))
                writer.key("code"); writer.string(error.code)
                writer.key("detail"); writer.string(Problem.bounded(error.detail))
                writer.endObject()
            }
            writer.endArray()
            if errors.count > Problem.maxListedErrors {
                writer.key("errorCount"); writer.int(errors.count)
            }
        }
        for (name, value) in members {
            writer.key(name)
            switch value {
            case .string(let text): writer.string(text)
            case .strings(let texts):
                writer.beginArray()
                for text in texts { writer.string(text) }
                writer.endArray()
            }
        }
        writer.endObject()
        var response = Response(status: status, headers: headers, body: writer.bytes)
        response.headers.replaceOrAdd(name: "Content-Type", value: "application/problem+json")
        return response
    }

    /// `text`, cut to `maxEchoedLength` scalars with an ellipsis.
    static func bounded(_ text: String) -> String {
        guard text.utf8.count > maxEchoedLength else { return text }
        let scalars = text.unicodeScalars
        guard scalars.count > maxEchoedLength else { return text }
        return String(String.UnicodeScalarView(scalars.prefix(maxEchoedLength - 1))) + "…"
    }

    /// The problem for a request the parser refused.
    public init(_ error: HTTPParseError) {
        self.init(status: error.status, domainCode: error.code, detail: error.detail)
    }

    public static func notFound(_ detail: String = "No resource exists at this path.") -> Problem {
        Problem(status: .notFound, code: .notFound, detail: detail)
    }

    public static func methodNotAllowed(allow: [HTTPMethod]) -> Problem {
        var headers = HTTPHeaders()
        headers.add(name: "Allow", value: allow.map(\.rawValue).joined(separator: ", "))
        return Problem(
            status: .methodNotAllowed, code: .methodNotAllowed,
            detail: "This resource does not support the request method.", headers: headers)
    }

    /// `503 overloaded` with `Retry-After`.
    public static func serviceUnavailable(
        detail: String = "The server is overloaded; try again shortly.", retryAfterSeconds: Int = 1
    ) -> Problem {
        serviceUnavailable(domainCode: ProblemCode.overloaded, detail: detail, retryAfterSeconds: retryAfterSeconds)
    }

    /// `503` with `Retry-After` and a typed code of the layers above.
    public static func serviceUnavailable<Code: RawRepresentable<String>>(
        domainCode code: Code, detail: String, retryAfterSeconds: Int = 1
    ) -> Problem {
        var headers = HTTPHeaders()
        headers.add(name: "Retry-After", value: String(retryAfterSeconds))
        return Problem(status: .serviceUnavailable, domainCode: code, detail: detail, headers: headers)
    }

    public static let internalError = Problem(
        status: .internalServerError, code: .internalError,
        detail: "The server failed to handle the request.")
}

/// An error that knows the HTTP answer it stands for; every other error becomes a logged `500`.
public protocol HTTPResponseError: Error {
    var problem: Problem { get }
}
