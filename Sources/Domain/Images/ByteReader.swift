/// Bounds-checked reads of big- and little-endian integers from a borrowed buffer.
///
/// Every read checks its range first and throws `truncated` instead of reading past the end,
/// so a header parser can take lengths from the input without trusting them.
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    /// Named in the `truncated` error.
    let format: ImageFormat

    var count: Int { bytes.count }

    /// Whether `length` bytes exist at `offset`, without overflow for hostile lengths.
    func has(_ length: Int, at offset: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= bytes.count && length <= bytes.count - offset
    }

    func require(_ length: Int, at offset: Int) throws(ImageError) {
        guard has(length, at: offset) else { throw .truncated(format, at: min(max(offset, 0), bytes.count)) }
    }

    func u8(_ offset: Int) throws(ImageError) -> UInt8 {
        try require(1, at: offset)
        return bytes[offset]
    }

    func u16be(_ offset: Int) throws(ImageError) -> UInt16 {
        try require(2, at: offset)
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    func u16le(_ offset: Int) throws(ImageError) -> UInt16 {
        try require(2, at: offset)
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    func u24le(_ offset: Int) throws(ImageError) -> UInt32 {
        try require(3, at: offset)
        return UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16
    }

    func u32be(_ offset: Int) throws(ImageError) -> UInt32 {
        try require(4, at: offset)
        var value: UInt32 = 0
        for index in offset..<offset + 4 { value = value << 8 | UInt32(bytes[index]) }
        return value
    }

    func u32le(_ offset: Int) throws(ImageError) -> UInt32 {
        try require(4, at: offset)
        var value: UInt32 = 0
        for index in (offset..<offset + 4).reversed() { value = value << 8 | UInt32(bytes[index]) }
        return value
    }

    func u64be(_ offset: Int) throws(ImageError) -> UInt64 {
        try require(8, at: offset)
        var value: UInt64 = 0
        for index in offset..<offset + 8 { value = value << 8 | UInt64(bytes[index]) }
        return value
    }

    /// Whether the bytes at `offset` are `expected`; false (not an error) when they are missing.
    func matches(_ expected: some Collection<UInt8>, at offset: Int) -> Bool {
        guard has(expected.count, at: offset) else { return false }
        return bytes[offset..<offset + expected.count].elementsEqual(expected)
    }
}
