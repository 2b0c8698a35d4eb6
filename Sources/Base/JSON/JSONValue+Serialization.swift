extension JSONValue {
    /// Compact JSON as UTF-8 bytes, keys in their stored order.
    public func serialized() -> [UInt8] {
        var writer = JSONWriter()
        writer.value(self)
        return writer.bytes
    }

    /// Compact JSON as a string.
    public func serializedString() -> String {
        String(decoding: serialized(), as: UTF8.self)
    }
}
