/// An HTTP request method: a token such as `GET`, compared case-sensitively (RFC 9110 §9.1).
public struct HTTPMethod: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let patch = HTTPMethod("PATCH")
    public static let delete = HTTPMethod("DELETE")
    public static let options = HTTPMethod("OPTIONS")
    public static let trace = HTTPMethod("TRACE")
    public static let connect = HTTPMethod("CONNECT")

    /// The methods this server knows; any other token is answered with `501`.
    public static let known: [HTTPMethod] = [.get, .head, .post, .put, .patch, .delete, .options, .trace, .connect]

    public var description: String { rawValue }

    /// Builds a method from validated token bytes, reusing the common ones without allocating.
    static func from(_ bytes: UnsafeRawBufferPointer) -> HTTPMethod {
        switch bytes.count {
        case 3:
            if bytes.elementsEqual("GET".utf8) { return .get }
            if bytes.elementsEqual("PUT".utf8) { return .put }
        case 4:
            if bytes.elementsEqual("POST".utf8) { return .post }
            if bytes.elementsEqual("HEAD".utf8) { return .head }
        case 5:
            if bytes.elementsEqual("PATCH".utf8) { return .patch }
        case 6:
            if bytes.elementsEqual("DELETE".utf8) { return .delete }
        default:
            break
        }
        return HTTPMethod(String(decoding: bytes, as: UTF8.self))
    }
}
