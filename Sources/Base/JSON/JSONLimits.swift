/// Bounds that keep a hostile document from costing more than a bounded amount of time and memory.
public struct JSONLimits: Sendable, Hashable {
    /// Deepest allowed nesting of arrays and objects; `[]` is depth 1, a scalar depth 0.
    /// The parser never recurses, but Swift releases, compares and serializes a `JSONValue`
    /// recursively, so keep this in the hundreds at most.
    public var maxDepth: Int
    /// Longest accepted input in bytes, checked before anything is parsed.
    public var maxBytes: Int
    /// Longest string or key in UTF-8 bytes after unescaping; `nil` means bounded only by `maxBytes`.
    public var maxStringBytes: Int?
    /// Most keys in any one object; `nil` means bounded only by `maxBytes`.
    public var maxKeysPerObject: Int?
    /// Longest number literal in characters. No IEEE double needs more than about 25 significant
    /// characters, so a longer literal is refused rather than handed to the number conversion.
    public var maxNumberLength: Int

    public init(
        maxDepth: Int = 32,
        maxBytes: Int = 1 << 20,
        maxStringBytes: Int? = nil,
        maxKeysPerObject: Int? = nil,
        maxNumberLength: Int = 100
    ) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
        self.maxStringBytes = maxStringBytes
        self.maxKeysPerObject = maxKeysPerObject
        self.maxNumberLength = maxNumberLength
    }

    /// The API's request-body defaults: 1 MiB, depth 32, numbers of at most 100 characters.
    public static let `default` = JSONLimits()
}
