extension ImageInspector {
    /// GIF: the six-byte signature, then the logical screen descriptor (width and height as
    /// little-endian 16-bit numbers, then three bytes of flags, background and aspect).
    static func gifSize(_ reader: ByteReader) throws(ImageError) -> Size {
        try reader.require(7, at: 6)
        return Size(try reader.u16le(6), try reader.u16le(8))
    }
}
