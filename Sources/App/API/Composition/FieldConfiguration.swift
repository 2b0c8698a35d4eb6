import Accounts
import Files
import JSON

/// The optional file that pins custom field types: `{"fields": {"dateOfBirth": "date", …}}`.
enum FieldConfiguration {
    static func load(path: String) throws -> [String: FieldType] {
        let bytes: [UInt8]
        do {
            bytes = try FileReader.bytes(path, limit: 1 << 20)
        } catch {
            throw ConfigurationError("--field-config: \(error)")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw ConfigurationError("--field-config: \(path) is not valid JSON: \(error)")
        }
        guard let fields = value["fields"]?.objectValue else {
            throw ConfigurationError("--field-config: \(path) must hold {\"fields\": {\"name\": \"type\", …}}")
        }
        var types: [String: FieldType] = [:]
        for (name, type) in fields {
            guard let text = type.stringValue, let parsed = FieldType(rawValue: text) else {
                throw ConfigurationError(
                    "--field-config: field \(name) has an unknown type (expected one of \(FieldType.allCases.map(\.rawValue).joined(separator: ", ")))"
                )
            }
            types[name] = parsed
        }
        return types
    }
}
