extension ImageInspector {
    /// WebP: a RIFF container of form type `WEBP` whose first chunk is `VP8 ` (lossy), `VP8L`
    /// (lossless) or `VP8X` (extended, which states the canvas size).
    ///
    /// The RIFF size is checked against the first chunk but not against the buffer, which may
    /// be a prefix of the file; bytes after the RIFF payload are ignored, as libwebp does.
    static func webpSize(_ reader: ByteReader) throws(ImageError) -> Size {
        let riffSize = Int(try reader.u32le(4))
        // "WEBP" and at least one chunk header.
        guard riffSize >= 12 else {
            throw .malformed(.webp, "the RIFF size is too small to hold a chunk.", at: 4)
        }
        let chunk = 12, payload = 20
        try reader.require(8, at: chunk)
        let chunkSize = Int(try reader.u32le(chunk + 4))
        guard chunkSize <= riffSize - 12 else {
            throw .malformed(.webp, "the first chunk is larger than the RIFF size.", at: chunk + 4)
        }
        if reader.matches("VP8 ".utf8, at: chunk) {
            guard chunkSize >= 10 else { throw .malformed(.webp, "the VP8 chunk is too short.", at: chunk + 4) }
            // A 3-byte frame tag whose low bit is 0 for a key frame, then the start code.
            guard try reader.u8(payload) & 1 == 0 else {
                throw .malformed(.webp, "the VP8 frame is not a key frame.", at: payload)
            }
            try reader.require(7, at: payload + 3)
            guard reader.matches([0x9D, 0x01, 0x2A], at: payload + 3) else {
                throw .malformed(.webp, "the VP8 start code is missing.", at: payload + 3)
            }
            // The top two bits of each are an upscaling hint, not part of the size.
            return Size(try reader.u16le(payload + 6) & 0x3FFF, try reader.u16le(payload + 8) & 0x3FFF)
        }
        if reader.matches("VP8L".utf8, at: chunk) {
            guard chunkSize >= 5 else { throw .malformed(.webp, "the VP8L chunk is too short.", at: chunk + 4) }
            guard try reader.u8(payload) == 0x2F else {
                throw .malformed(.webp, "the VP8L signature is missing.", at: payload)
            }
            // 14 bits width - 1, 14 bits height - 1, 1 bit alpha, 3 bits version (0).
            let bits = try reader.u32le(payload + 1)
            guard bits >> 29 == 0 else { throw .malformed(.webp, "the VP8L version is not 0.", at: payload + 1) }
            return Size((bits & 0x3FFF) + 1, (bits >> 14 & 0x3FFF) + 1)
        }
        if reader.matches("VP8X".utf8, at: chunk) {
            guard chunkSize >= 10 else { throw .malformed(.webp, "the VP8X chunk is too short.", at: chunk + 4) }
            // 1 byte flags, 3 reserved, then 24-bit canvas width - 1 and height - 1.
            try reader.require(10, at: payload)
            return Size(try reader.u24le(payload + 4) + 1, try reader.u24le(payload + 7) + 1)
        }
        throw .malformed(.webp, "the first chunk is not VP8, VP8L or VP8X.", at: chunk)
    }
}
