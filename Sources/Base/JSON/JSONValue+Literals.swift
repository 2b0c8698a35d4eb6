extension JSONValue: ExpressibleByNilLiteral {
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    public init(integerLiteral value: Int) { self = .number(JSONNumber(value)) }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A float literal too large for `Double` (such as `1e400`) is a programming error and traps.
    public init(floatLiteral value: Double) {
        guard let number = JSONNumber(value) else { preconditionFailure("JSON cannot express \(value)") }
        self = .number(number)
    }
}

extension JSONValue: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// Keys keep the literal's order; a repeated key traps, as it does for `Dictionary`.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(uniqueKeysWithValues: elements))
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// Keys keep the literal's order; a repeated key traps, as it does for `Dictionary`.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(uniqueKeysWithValues: elements)
    }
}
