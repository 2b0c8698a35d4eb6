/// An ordered list of header fields with case-insensitive lookup.
///
/// Fields live in one byte buffer with offsets into it, so parsing a request costs two
/// allocations however many fields it has, and no `String` is made until a value is asked for.
public struct HTTPHeaders: Sendable, Sequence {
    @usableFromInline struct Field: Sendable {
        @usableFromInline var nameStart: Int32
        @usableFromInline var nameLength: Int32
        @usableFromInline var valueStart: Int32
        @usableFromInline var valueLength: Int32
    }

    @usableFromInline var storage: [UInt8]
    @usableFromInline var fields: [Field]

    public init() {
        storage = []
        fields = []
    }

    public init(_ pairs: [(String, String)]) {
        self.init()
        for (name, value) in pairs { add(name: name, value: value) }
    }

    /// Wraps a parsed header block; `fields` point into `storage`.
    init(storage: [UInt8], fields: [Field]) {
        self.storage = storage
        self.fields = fields
    }

    /// Makes room for `fieldCount` more fields of `byteCount` bytes in all, so that building a
    /// response's few fields does not reallocate at each one.
    public mutating func reserveCapacity(fields fieldCount: Int, bytes byteCount: Int) {
        storage.reserveCapacity(storage.count + byteCount)
        fields.reserveCapacity(fields.count + fieldCount)
    }

    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }

    /// Appends a field. A CR, LF or NUL in it becomes a space, so no value, wherever it came
    /// from, can split a response.
    public mutating func add(name: String, value: String) {
        var name = name
        var value = value
        let nameStart = storage.count
        name.withUTF8 { appendSanitized($0) }
        let valueStart = storage.count
        value.withUTF8 { appendSanitized($0) }
        fields.append(
            Field(
                nameStart: Int32(nameStart), nameLength: Int32(valueStart - nameStart),
                valueStart: Int32(valueStart), valueLength: Int32(storage.count - valueStart)))
    }

    /// Appends `bytes` with every CR, LF and NUL replaced by a space.
    private mutating func appendSanitized(_ bytes: UnsafeBufferPointer<UInt8>) {
        let start = storage.count
        storage.append(contentsOf: bytes)
        guard bytes.contains(where: { $0 == ASCII.cr || $0 == ASCII.lf || $0 == 0 }) else { return }
        for index in start..<storage.count where storage[index] == ASCII.cr || storage[index] == ASCII.lf || storage[index] == 0 {
            storage[index] = ASCII.space
        }
    }

    /// Replaces every field of that name with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    /// Removes every field of that name.
    public mutating func remove(name: String) {
        guard contains(name) else { return }
        let kept = fields.filter { !matches($0, name) }
        fields = kept
    }

    /// The first value of a field, or nil.
    public subscript(name: String) -> String? {
        for field in fields where matches(field, name) { return value(of: field) }
        return nil
    }

    /// Every value of a field, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { matches($0, name) }.map { value(of: $0) }
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { matches($0, name) }
    }

    /// Number of fields with this name.
    func count(_ name: String) -> Int {
        var n = 0
        for field in fields where matches(field, name) { n += 1 }
        return n
    }

    public func makeIterator() -> AnyIterator<(name: String, value: String)> {
        var index = 0
        return AnyIterator {
            guard index < fields.count else { return nil }
            defer { index += 1 }
            let field = fields[index]
            return (name(of: field), value(of: field))
        }
    }

    /// Calls `body` with the raw bytes of each field, for serialization without `String`s.
    func forEachRaw(_ body: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) {
        storage.withUnsafeBufferPointer { buffer in
            for field in fields {
                let name = UnsafeBufferPointer(rebasing: buffer[Int(field.nameStart)..<Int(field.nameStart + field.nameLength)])
                let value = UnsafeBufferPointer(rebasing: buffer[Int(field.valueStart)..<Int(field.valueStart + field.valueLength)])
                body(name, value)
            }
        }
    }

    /// Whether a field has a name equal to `name` ignoring ASCII case.
    @usableFromInline func matches(_ field: Field, _ name: String) -> Bool {
        var name = name
        return name.withUTF8 { wanted in
            guard wanted.count == Int(field.nameLength) else { return false }
            return storage.withUnsafeBufferPointer { buffer in
                var i = 0
                var j = Int(field.nameStart)
                while i < wanted.count {
                    if ASCII.lower(wanted[i]) != ASCII.lower(buffer[j]) { return false }
                    i += 1
                    j += 1
                }
                return true
            }
        }
    }

    func name(of field: Field) -> String {
        String(decoding: storage[Int(field.nameStart)..<Int(field.nameStart + field.nameLength)], as: UTF8.self)
    }

    func value(of field: Field) -> String {
        String(decoding: storage[Int(field.valueStart)..<Int(field.valueStart + field.valueLength)], as: UTF8.self)
    }

    /// Calls `body` with the raw bytes of every value of `name`.
    func forEachValue(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> Void) rethrows {
        try storage.withUnsafeBufferPointer { buffer in
            for field in fields where matches(field, name) {
                try body(UnsafeBufferPointer(rebasing: buffer[Int(field.valueStart)..<Int(field.valueStart + field.valueLength)]))
            }
        }
    }
}
