/// A parsed or constructed JSON document.
public enum JSONValue: Sendable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)
}

extension JSONValue: Equatable {
    /// Strings compare by their exact Unicode scalars (RFC 8259 §8.3), not by Swift's canonical
    /// equivalence, so `"é"` precomposed and decomposed are different values, as they are on the wire.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case (.bool(let l), .bool(let r)): return l == r
        case (.number(let l), .number(let r)): return l == r
        case (.string(let l), .string(let r)): return l.utf8.elementsEqual(r.utf8)
        case (.array(let l), .array(let r)): return l == r
        case (.object(let l), .object(let r)): return l == r
        default: return false
        }
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact serialization.
    public var description: String { serializedString() }
}
