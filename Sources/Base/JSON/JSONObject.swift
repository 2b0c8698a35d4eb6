/// A JSON object: members in insertion order, found by key in constant time.
///
/// Keys are compared by their exact Unicode scalars (RFC 8259 §8.3), not by Swift's canonical
/// equivalence. Equality ignores order, as JSON does; serialization keeps it.
public struct JSONObject: Sendable {
    public typealias Element = (key: String, value: JSONValue)

    private var entries: [Element]
    /// Built only once an object outgrows `linearSearchLimit`: most request objects are small, and
    /// scanning a few keys beats hashing them.
    private var index: [ExactKey: Int]?

    private static let linearSearchLimit = 8

    public init() {
        entries = []
        index = nil
    }

    /// Traps on a repeated key, as `Dictionary(uniqueKeysWithValues:)` does.
    public init(uniqueKeysWithValues pairs: some Sequence<(String, JSONValue)>) {
        self.init()
        for (key, value) in pairs {
            precondition(position(of: key) == nil, "duplicate key in JSONObject literal")
            append(key: key, value: value)
        }
    }

    /// Keys in order.
    public var keys: [String] { entries.map(\.key) }

    /// Values in key order.
    public var values: [JSONValue] { entries.map(\.value) }

    /// The value for `key`; setting `nil` removes the member, setting a new key appends it and
    /// setting an existing one replaces the value in place.
    public subscript(key: String) -> JSONValue? {
        get {
            guard let position = position(of: key) else { return nil }
            return entries[position].value
        }
        set {
            if let newValue {
                updateValue(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    /// Sets `value` for `key` and returns the value it replaced, if any.
    @discardableResult
    public mutating func updateValue(_ value: JSONValue, forKey key: String) -> JSONValue? {
        if let position = position(of: key) {
            let old = entries[position].value
            entries[position].value = value
            return old
        }
        append(key: key, value: value)
        return nil
    }

    /// Removes the member named `key`, keeping the others in order; O(n).
    @discardableResult
    public mutating func removeValue(forKey key: String) -> JSONValue? {
        guard let position = position(of: key) else { return nil }
        let removed = entries.remove(at: position)
        if index != nil {
            index![ExactKey(key)] = nil
            for later in position..<entries.count {
                index![ExactKey(entries[later].key)] = later
            }
        }
        return removed.value
    }

    /// Whether the object has a member named `key`.
    public func contains(key: String) -> Bool {
        position(of: key) != nil
    }

    /// Appends a member the caller knows to be new.
    mutating func append(key: String, value: JSONValue) {
        entries.append((key, value))
        if index != nil {
            index![ExactKey(key)] = entries.count - 1
        } else if entries.count > Self.linearSearchLimit {
            var built = [ExactKey: Int](minimumCapacity: entries.count * 2)
            for (position, entry) in entries.enumerated() {
                built[ExactKey(entry.key)] = position
            }
            index = built
        }
    }

    private func position(of key: String) -> Int? {
        if let index {
            return index[ExactKey(key)]
        }
        return entries.firstIndex { $0.key.utf8.elementsEqual(key.utf8) }
    }

    /// A key hashed and compared by its UTF-8 bytes.
    private struct ExactKey: Hashable, Sendable {
        let string: String
        init(_ string: String) { self.string = string }

        static func == (lhs: ExactKey, rhs: ExactKey) -> Bool {
            lhs.string.utf8.elementsEqual(rhs.string.utf8)
        }

        func hash(into hasher: inout Hasher) {
            var string = string
            string.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
            hasher.combine(string.utf8.count)
        }
    }
}

extension JSONObject: RandomAccessCollection {
    public var startIndex: Int { entries.startIndex }
    public var endIndex: Int { entries.endIndex }
    public subscript(position: Int) -> Element { entries[position] }
}

extension JSONObject: Equatable {
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        for (key, value) in lhs.entries {
            guard let other = rhs[key], other == value else { return false }
        }
        return true
    }
}
