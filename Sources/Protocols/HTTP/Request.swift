/// A complete request: its head and its body, as handed to a route.
public struct Request: Sendable {
    public var head: RequestHead
    public var body: [UInt8]

    public init(head: RequestHead, body: [UInt8] = []) {
        self.head = head
        self.body = body
    }

    public var method: HTTPMethod { head.method }
    public var path: String { head.path }
    public var query: String? { head.query }
    public var headers: HTTPHeaders { head.headers }
}
