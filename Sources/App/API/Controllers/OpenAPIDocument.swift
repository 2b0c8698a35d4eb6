/// The OpenAPI 3.1 document of the HTTP API: the contract of API.md plus the decisions it leaves to
/// the implementation, written into `description` fields. It is `Resources/openapi.json`, compiled
/// in; served at `GET /openapi.json` and printed by `exosphere openapi`. `OpenAPIDocumentTests`
/// checks that its paths are exactly the route table's and that every error code is listed;
/// `scripts/openapi_check.py` that every `$ref` resolves.
public enum OpenAPIDocument {
    public static let bytes: [UInt8] = EmbeddedResource.bytes("openapi.json")
    public static var json: String { String(decoding: bytes, as: UTF8.self) }
}
