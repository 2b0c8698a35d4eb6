import JSON

/// The type of a custom profile field, fixed for the whole deployment.
public enum FieldType: String, Sendable, CaseIterable, Equatable {
    case string, integer, double, boolean, date, datetime

    /// The type a first write gives a field, from its JSON literal; nil for arrays and objects.
    public static func inferred(from value: JSONValue) -> FieldType? {
        switch value {
        case .bool: return .boolean
        case .number(let number): return number.isInteger ? .integer : .double
        case .string(let text):
            if CalendarDate.isValid(text) { return .date }
            if RFC3339.isValidDateTime(text) { return .datetime }
            return .string
        case .null, .array, .object: return nil
        }
    }

    /// The value in its canonical form for this type (a double is always written with a fraction
    /// or an exponent), or nil when the literal does not fit.
    ///
    /// Every refusal is a `return nil` statement: `JSONValue` is `ExpressibleByNilLiteral`, so in
    /// `condition ? value : nil` the `nil` becomes `JSONValue.null`, which callers read as "remove
    /// the field" — a mistyped write would silently delete data.
    public func canonical(_ value: JSONValue, limits: CustomFieldLimits) -> JSONValue? {
        switch (self, value) {
        case (.string, .string(let text)):
            guard text.utf8.count <= limits.maxStringBytes else { return nil }
            return value
        case (.integer, .number(let number)):
            guard number.isInteger, number.int64Value != nil else { return nil }
            return value
        case (.double, .number(let number)):
            guard let double = number.doubleValue, let canonical = JSONNumber(double) else { return nil }
            return .number(canonical)
        case (.boolean, .bool):
            return value
        case (.date, .string(let text)):
            guard CalendarDate.isValid(text) else { return nil }
            return value
        case (.datetime, .string(let text)):
            guard RFC3339.isValidDateTime(text) else { return nil }
            return value
        default:
            return nil
        }
    }

    /// How a JSON value is described in an error ("got string").
    public static func describe(_ value: JSONValue) -> String {
        switch value {
        case .array: return "array"
        case .object: return "object"
        case .null: return "null"
        default: return inferred(from: value)?.rawValue ?? "unknown"
        }
    }
}

/// Bounds on custom fields (API.md: 64 fields, 4096-byte strings, a 64 KiB user document).
public struct CustomFieldLimits: Sendable {
    public var maxFields = 64
    public var maxStringBytes = 4096
    public var maxDocumentBytes = 64 * 1024
    /// The most custom field names the whole deployment may have; a write that would add one
    /// more is `422 field_limit_reached`.
    public var maxFieldNames = 1_000
    /// Only the fields the field configuration pins may be written (`422 unknown_field` for others).
    public var schemaLocked = false

    public init() {}
}
