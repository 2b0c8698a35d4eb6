import Cryptography
import HTTP
import HTTPServer
import Images

/// `?limit=…&after=…` of a keyset-paged list: `limit` 1–100 (default 50), `after` a previous page's `next`.
struct PageParameters {
    var limit: Int
    var cursor: KeysetCursor?

    /// `422 invalid_limit` or `422 invalid_cursor` (an `after` that is not one of our cursors).
    init(_ request: Request) throws {
        let query = QueryParameters(request.query)
        limit = try PageParameters.limit(query)
        if let text = query["after"] {
            guard let parsed = KeysetCursor(text: text) else { throw PageParameters.invalidCursor }
            cursor = parsed
        }
    }

    /// `?limit=`, 1–100, 50 when absent; `422 invalid_limit` otherwise. Also for lists whose
    /// cursor is not a `KeysetCursor` (the audit log's).
    static func limit(_ query: QueryParameters) throws -> Int {
        guard let text = query["limit"] else { return 50 }
        guard let value = Int(text), (1...100).contains(value) else { throw PageParameters.invalidLimit }
        return value
    }

    static let invalidCursor = Problem(
        status: .unprocessableContent, code: .invalidCursor, detail: "after must be a cursor from a previous page's next.")
    static let invalidLimit = Problem(status: .unprocessableContent, code: .invalidLimit, detail: "limit must be an integer from 1 to 100.")

    /// `?order=newest|oldest` of an image list (default `oldest`).
    static func imageOrder(_ request: Request) throws -> ImageOrder {
        guard let text = QueryParameters(request.query)["order"] else { return .oldest }
        guard let order = ImageOrder(rawValue: text) else { throw ImageError(.invalidOrder, "order must be newest or oldest.") }
        return order
    }
}
