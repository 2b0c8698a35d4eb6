import Zip

extension ImageInspector {
    /// PNG: the signature, then IHDR, which the specification requires to be the first chunk.
    /// Its CRC is checked so that a damaged header is not taken for a size.
    static func pngSize(_ reader: ByteReader) throws(ImageError) -> Size {
        let chunkType = 12
        try reader.require(8, at: 8)
        guard reader.matches("IHDR".utf8, at: chunkType) else {
            throw .malformed(.png, "the first chunk is not IHDR.", at: chunkType)
        }
        guard try reader.u32be(8) == 13 else {
            throw .malformed(.png, "the IHDR chunk is not 13 bytes long.", at: 8)
        }
        let data = 16, crc = data + 13
        try reader.require(4, at: crc)
        guard CRC32.checksum(reader.bytes[chunkType..<crc]) == (try reader.u32be(crc)) else {
            throw .malformed(.png, "the IHDR checksum is wrong.", at: crc)
        }
        let width = try reader.u32be(data), height = try reader.u32be(data + 4)
        // The specification caps both at 2^31 - 1 so that signed readers agree.
        guard width <= UInt32(Int32.max), height <= UInt32(Int32.max) else {
            throw .malformed(.png, "a dimension is larger than 2^31 - 1.", at: data)
        }
        let bitDepth = try reader.u8(data + 8), colorType = try reader.u8(data + 9)
        let allowedDepths: [UInt8]
        switch colorType {
        case 0: allowedDepths = [1, 2, 4, 8, 16]
        case 3: allowedDepths = [1, 2, 4, 8]
        case 2, 4, 6: allowedDepths = [8, 16]
        default: throw .malformed(.png, "the colour type is invalid.", at: data + 9)
        }
        guard allowedDepths.contains(bitDepth) else {
            throw .malformed(.png, "the bit depth is invalid for the colour type.", at: data + 8)
        }
        guard try reader.u8(data + 10) == 0, try reader.u8(data + 11) == 0, try reader.u8(data + 12) <= 1 else {
            throw .malformed(.png, "the compression, filter or interlace method is invalid.", at: data + 10)
        }
        return Size(width, height)
    }
}
