import Cryptography
import HTTP
import HTTPServer
import Images

/// `?limit=…&after=…` of a keyset-paged list: `limit` 1–100 (default 50), `after` a previous page's `next`.
struct PageParameters {
    var limit = 50
    var cursor: KeysetCursor?

    /// `invalidCursor` is the route's error for an `after` that is not one of our cursors.
    init(_ request: Request, invalidCursor: @autoclosure () -> any Error) throws {
        let query = QueryParameters(request.query)
        if let text = query["limit"] {
            guard let value = Int(text), (1...100).contains(value) else {
                throw Problem(status: .unprocessableContent, code: "invalid_limit", detail: "limit must be an integer from 1 to 100.")
            }
            limit = value
        }
        if let text = query["after"] {
            guard let parsed = KeysetCursor(text: text) else { throw invalidCursor() }
            cursor = parsed
        }
    }

    /// `?order=newest|oldest` of an image list (default `oldest`).
    static func imageOrder(_ request: Request) throws -> ImageOrder {
        guard let text = QueryParameters(request.query)["order"] else { return .oldest }
        guard let order = ImageOrder(rawValue: text) else { throw ImageError(.invalidOrder, "order must be newest or oldest.") }
        return order
    }
}
