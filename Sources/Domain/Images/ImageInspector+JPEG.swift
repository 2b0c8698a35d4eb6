extension ImageInspector {
    /// JPEG: SOI, then marker segments up to the first frame header (SOFn), whose fields give
    /// the size. Nothing after the frame header is read.
    ///
    /// As libjpeg does, stray bytes before a marker are skipped and any number of 0xFF fill
    /// bytes may precede a marker code; every segment length is bounds-checked before use.
    static func jpegSize(_ reader: ByteReader) throws(ImageError) -> Size {
        var offset = 2
        while true {
            // Find the next 0xFF, then skip fill bytes up to the marker code.
            while try reader.u8(offset) != 0xFF { offset += 1 }
            while try reader.u8(offset) == 0xFF { offset += 1 }
            let marker = try reader.u8(offset)
            offset += 1
            switch marker {
            case 0x00:
                // A stuffed zero only occurs in entropy-coded data; here it is a stray byte.
                continue
            case 0x01, 0xD0...0xD7:
                // TEM and RST0-7 stand alone, with no length.
                continue
            case 0xD8:
                throw .malformed(.jpeg, "a second start-of-image marker comes before the frame header.", at: offset - 1)
            case 0xD9:
                throw .malformed(.jpeg, "the image ends before any frame header.", at: offset - 1)
            case 0xDA:
                throw .malformed(.jpeg, "a scan starts before the frame header.", at: offset - 1)
            case 0xC0...0xCF where marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
                // Lf, P, Y (lines), X (samples per line), Nf.
                let length = try reader.u16be(offset)
                guard length >= 8 else {
                    throw .malformed(.jpeg, "the frame header is too short.", at: offset)
                }
                let height = try reader.u16be(offset + 3), width = try reader.u16be(offset + 5)
                return Size(width, height)
            default:
                let length = Int(try reader.u16be(offset))
                guard length >= 2 else {
                    throw .malformed(.jpeg, "a segment length is smaller than the length field.", at: offset)
                }
                offset += length
            }
        }
    }
}
