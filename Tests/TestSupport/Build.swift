/// Builders of tiny images, byte by byte, so that every header field is under the test's control.
public enum Build {
    public static func be16(_ value: Int) -> [UInt8] { [UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)] }
    public static func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }
    public static func le24(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF)] }
    public static func be32(_ value: UInt32) -> [UInt8] { (0..<4).reversed().map { UInt8(value >> ($0 * 8) & 0xFF) } }
    public static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(value >> ($0 * 8) & 0xFF) } }
    public static func be64(_ value: UInt64) -> [UInt8] { (0..<8).reversed().map { UInt8(value >> ($0 * 8) & 0xFF) } }
    public static func ascii(_ text: String) -> [UInt8] { Array(text.utf8) }

    // MARK: PNG

    public static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// A chunk with its CRC over type and data, as the specification computes it.
    public static func pngChunk(_ type: String, _ data: [UInt8], crc: UInt32? = nil) -> [UInt8] {
        let body = ascii(type) + data
        return be32(UInt32(data.count)) + body + be32(crc ?? crc32(body))
    }

    public static func ihdr(
        width: UInt32, height: UInt32, bitDepth: UInt8 = 8, colorType: UInt8 = 6,
        interlace: UInt8 = 0
    ) -> [UInt8] {
        be32(width) + be32(height) + [bitDepth, colorType, 0, 0, interlace]
    }

    /// Signature, IHDR, an IDAT (not a valid stream: nobody decodes it) and IEND.
    public static func png(width: UInt32, height: UInt32, bitDepth: UInt8 = 8, colorType: UInt8 = 6) -> [UInt8] {
        pngSignature + pngChunk("IHDR", ihdr(width: width, height: height, bitDepth: bitDepth, colorType: colorType))
            + pngChunk("IDAT", [0x78, 0x9C, 0x63, 0x00, 0x00]) + pngChunk("IEND", [])
    }

    // MARK: GIF

    public static func gif(_ version: String = "89a", width: Int, height: Int) -> [UInt8] {
        ascii("GIF" + version) + le16(width) + le16(height) + [0x00, 0x00, 0x00]
            + [0x2C] + le16(0) + le16(0) + le16(width) + le16(height) + [0x00] + [0x02, 0x02, 0x44, 0x01, 0x00] + [0x3B]
    }

    // MARK: JPEG

    public static func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [0xFF, marker] + be16(payload.count + 2) + payload
    }

    /// A frame header with three components; `marker` C0 is baseline, C2 progressive.
    public static func sof(_ marker: UInt8 = 0xC0, width: Int, height: Int) -> [UInt8] {
        segment(marker, [8] + be16(height) + be16(width) + [3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])
    }

    public static let app0JFIF = segment(0xE0, ascii("JFIF") + [0, 1, 1, 0, 0, 1, 0, 1, 0, 0])
    /// An Exif APP1 whose TIFF data is a little-endian header with an empty IFD.
    public static let app1Exif = segment(0xE1, ascii("Exif") + [0, 0] + ascii("II") + [0x2A, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    public static let dqt = segment(0xDB, [0] + [UInt8](repeating: 1, count: 64))
    public static let dht = segment(0xC4, [0x00] + [0, 1] + [UInt8](repeating: 0, count: 14) + [0])
    public static let sos = segment(0xDA, [1, 1, 0, 0, 63, 0]) + [0x12, 0x34, 0xFF, 0x00, 0x56]

    /// SOI, the given segments (and whatever raw bytes the caller puts between them), EOI.
    public static func jpeg(_ parts: [[UInt8]]) -> [UInt8] {
        [0xFF, 0xD8] + parts.flatMap { $0 } + [0xFF, 0xD9]
    }

    // MARK: WebP

    public static func riff(_ chunks: [UInt8], size: UInt32? = nil) -> [UInt8] {
        ascii("RIFF") + le32(size ?? UInt32(4 + chunks.count)) + ascii("WEBP") + chunks
    }

    public static func webpChunk(_ type: String, _ payload: [UInt8], size: UInt32? = nil) -> [UInt8] {
        ascii(type) + le32(size ?? UInt32(payload.count)) + payload + (payload.count % 2 == 1 ? [0] : [])
    }

    public static func vp8Payload(width: Int, height: Int, keyFrame: Bool = true) -> [UInt8] {
        // Frame tag: key frame bit (0 = key), version 0, show frame, first partition size.
        [keyFrame ? 0x90 : 0x91, 0x01, 0x00, 0x9D, 0x01, 0x2A] + le16(width) + le16(height) + [0x02, 0xC0, 0x4C, 0x25]
    }

    public static func vp8(width: Int, height: Int) -> [UInt8] {
        riff(webpChunk("VP8 ", vp8Payload(width: width, height: height)))
    }

    public static func vp8l(width: Int, height: Int, alpha: Bool = false, version: UInt32 = 0) -> [UInt8] {
        let bits = UInt32(width - 1) | UInt32(height - 1) << 14 | (alpha ? 1 << 28 : 0) | version << 29
        return riff(webpChunk("VP8L", [0x2F] + le32(bits) + [0x07, 0x10, 0xFD, 0x8F]))
    }

    public static func vp8x(width: Int, height: Int) -> [UInt8] {
        riff(
            webpChunk("VP8X", [0x10, 0, 0, 0] + le24(width - 1) + le24(height - 1))
                + webpChunk("VP8 ", vp8Payload(width: width, height: height)))
    }

    // MARK: HEIC (ISO BMFF)

    public static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(UInt32(8 + payload.count)) + ascii(type) + payload
    }

    /// A box whose size is given in the 64-bit `largesize` field (size field 1).
    public static func box64(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        be32(1) + ascii(type) + be64(UInt64(16 + payload.count)) + payload
    }

    public static func fullBox(_ type: String, version: UInt8 = 0, flags: UInt8 = 0, _ payload: [UInt8]) -> [UInt8] {
        box(type, [version, 0, 0, flags] + payload)
    }

    public static func ftyp(_ major: String = "heic", _ compatible: [String] = ["mif1", "heic"]) -> [UInt8] {
        box("ftyp", ascii(major) + [0, 0, 0, 0] + compatible.flatMap(ascii))
    }

    public static func ispe(width: UInt32, height: UInt32) -> [UInt8] {
        fullBox("ispe", be32(width) + be32(height))
    }

    public static let hdlr = fullBox("hdlr", [0, 0, 0, 0] + ascii("pict") + [UInt8](repeating: 0, count: 13))
    public static let hvcC = box("hvcC", [1, 1, 0x60, 0, 0, 0, 0x90, 0, 0, 0, 0, 0, 0x5A, 0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, 0x0F, 0])

    public static func pitm(_ item: UInt16) -> [UInt8] { fullBox("pitm", be16(Int(item))) }

    /// An ipma (version 0, 8-bit indices) associating each item with 1-based ipco indices.
    public static func ipma(_ entries: [(item: UInt16, properties: [UInt8])]) -> [UInt8] {
        fullBox(
            "ipma",
            be32(UInt32(entries.count))
                + entries.flatMap { entry in
                    be16(Int(entry.item)) + [UInt8(entry.properties.count)] + entry.properties
                })
    }

    /// ftyp, then meta (hdlr, pitm 1, iprp (ipco (hvcC, ispe), ipma)), then mdat.
    public static func heic(width: UInt32, height: UInt32) -> [UInt8] {
        ftyp() + meta([hdlr, pitm(1), box("iprp", box("ipco", hvcC + ispe(width: width, height: height)) + ipma([(1, [0x81, 2])]))])
            + box("mdat", [0, 0, 0, 4, 1, 2, 3, 4])
    }

    public static func meta(_ children: [[UInt8]]) -> [UInt8] {
        fullBox("meta", children.flatMap { $0 })
    }

    /// CRC-32 (ISO-HDLC, as PNG uses), bit by bit: written independently of the code under test.
    public static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
