/// A JSON document as text, sent typed `jsonb` and read from `json` or `jsonb` columns.
///
/// The server validates and normalises it; parsing into a JSON value is the JSON module's job.
public struct PostgresJSON: Hashable, Sendable, CustomStringConvertible {
    /// The JSON text.
    public var text: String
    public init(_ text: String) { self.text = text }
    public var description: String { text }
}

extension PostgresJSON: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(text, type: .jsonb)
    }
}

extension PostgresJSON: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> PostgresJSON {
        PostgresJSON(text.string)
    }
}
