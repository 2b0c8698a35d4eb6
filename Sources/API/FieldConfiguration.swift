import Accounts
import Glibc
import JSON

/// The optional file that pins custom field types: `{"fields": {"dateOfBirth": "date", …}}`.
enum FieldConfiguration {
    static func load(path: String) throws -> [String: FieldType] {
        guard let file = fopen(path, "rb") else {
            throw ConfigurationError("--field-config: cannot open \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if bytes.count > 1 << 20 { throw ConfigurationError("--field-config: \(path) is larger than 1 MiB") }
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
                throw ConfigurationError("--field-config: field \(name) has an unknown type (expected one of \(FieldType.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            types[name] = parsed
        }
        return types
    }
}
