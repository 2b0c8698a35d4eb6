import Accounts
import HTTP
import HTTPServer
import JSON

/// Reading JSON request bodies and writing JSON responses, with the contract's limits.
enum JSONBody {
    /// Request bodies nest at most 32 deep and weigh at most 1 MiB (the server refuses larger ones first).
    static let limits = JSONLimits(maxDepth: 32, maxBytes: 1 << 20)

    /// The body as a JSON object. `415` for another content type; `400` for malformed JSON;
    /// `422` for JSON that is not an object or nests too deep.
    static func object(_ request: Request, accepting types: [String] = ["application/json"], optional: Bool = false) throws -> JSONObject {
        if request.body.isEmpty, optional { return JSONObject() }
        guard let contentType = request.headers["Content-Type"], types.contains(mediaType(contentType)) else {
            throw Problem(
                status: .unsupportedMediaType, code: .unsupportedMediaType,
                detail: "The body must be sent as \(types.joined(separator: " or ")).")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(request.body, limits: limits)
        } catch {
            if error.code == .tooDeep {
                throw Problem(status: .unprocessableContent, code: .tooDeep, detail: "The JSON body nests more than 32 levels.")
            }
            if error.code == .tooLarge {
                throw Problem(status: .contentTooLarge, code: .bodyTooLarge, detail: "The JSON body is larger than 1 MiB.")
            }
            throw AccountsError(.invalidJSON, "The body is not valid JSON: \(error.description)")
        }
        guard case .object(let object) = value else {
            throw AccountsError(.invalidType, "The body must be a JSON object.")
        }
        return object
    }

    /// The largest body parsed on an event loop; a larger one is parsed on the worker pool, so
    /// that a megabyte of JSON does not hold the loop's other connections.
    static let largestLoopBody = 64 * 1024

    /// The call's body as a JSON object (see `object(_:accepting:optional:)`), parsed where the
    /// handler runs, or, when it runs on an event loop and the body is large, on the worker pool.
    static func object(_ call: Call, accepting types: [String] = ["application/json"], optional: Bool = false) async throws -> JSONObject {
        let request = call.request
        guard request.body.count > largestLoopBody else { return try object(request, accepting: types, optional: optional) }
        return try await call.blocking { try object(request, accepting: types, optional: optional) }
    }

    /// The media type of a Content-Type value, lowercased, without parameters.
    static func mediaType(_ value: String) -> String {
        String(value.prefix { $0 != ";" }).trimmingCharacters(in: " \t").lowercased()
    }

    static func response(_ status: HTTPStatus = .ok, _ write: (inout JSONWriter) -> Void) -> Response {
        var writer = JSONWriter(capacity: 512)
        write(&writer)
        return Response(status: status, contentType: "application/json", body: writer.bytes)
    }
}

extension String {
    func trimmingCharacters(in set: String) -> String {
        let characters = Set(set)
        var slice = Substring(self)
        while let first = slice.first, characters.contains(first) { slice.removeFirst() }
        while let last = slice.last, characters.contains(last) { slice.removeLast() }
        return String(slice)
    }
}
