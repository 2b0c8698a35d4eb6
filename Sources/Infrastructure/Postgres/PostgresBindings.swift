/// The parameter values of a query, in order: `$1` is the first.
///
/// Values live in one byte buffer so that a query with a few parameters costs two allocations.
/// Text-format values are stored NUL-terminated, as libpq expects.
public struct PostgresBindings: Sendable, Hashable {
    struct Entry: Sendable, Hashable {
        var offset: Int32
        /// -1 for NULL.
        var length: Int32
        var isBinary: Bool
        var type: PostgresDataType
    }

    var bytes: [UInt8] = []
    var entries: [Entry] = []
    /// Set when a text value contains a NUL byte, which libpq's text format cannot carry.
    var encodingProblem: String?

    public init() {}

    /// The number of parameters.
    public var count: Int { entries.count }

    /// Appends a value; its `$n` number is `count` afterwards.
    public mutating func append<Value: PostgresEncodable>(_ value: Value) {
        value.encode(into: &self)
    }

    /// Appends SQL NULL of the given type (`.unspecified` lets the server infer it).
    public mutating func appendNull(type: PostgresDataType = .unspecified) {
        entries.append(Entry(offset: 0, length: -1, isBinary: false, type: type))
    }

    /// Appends a value in PostgreSQL's text format, written by `write` into the shared buffer.
    public mutating func appendText(type: PostgresDataType, _ write: (inout [UInt8]) -> Void) {
        let start = bytes.count
        write(&bytes)
        let end = bytes.count
        if encodingProblem == nil, bytes[start..<end].contains(0) {
            encodingProblem = "parameter $\(entries.count + 1) of type \(type) contains a NUL byte"
        }
        bytes.append(0)
        entries.append(Entry(offset: Int32(start), length: Int32(end - start), isBinary: false, type: type))
    }

    /// Appends UTF-8 text in PostgreSQL's text format.
    public mutating func appendText(_ text: String, type: PostgresDataType) {
        appendText(type: type) { $0.append(contentsOf: text.utf8) }
    }

    /// Whether the parameters have exactly these types, in order.
    func matches(_ types: [PostgresDataType]) -> Bool {
        guard types.count == entries.count else { return false }
        for index in entries.indices where entries[index].type != types[index] { return false }
        return true
    }

    /// Appends raw bytes in PostgreSQL's binary format for `type` (e.g. bytea).
    public mutating func appendBinary<Bytes: Collection<UInt8>>(_ value: Bytes, type: PostgresDataType) {
        let start = bytes.count
        bytes.append(contentsOf: value)
        entries.append(Entry(offset: Int32(start), length: Int32(bytes.count - start), isBinary: true, type: type))
    }
}
