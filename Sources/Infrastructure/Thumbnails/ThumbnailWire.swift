/// The frames between the server and a helper over its stdin and stdout: little-endian lengths,
/// every one bounded, so a helper that was taken over by a crafted file can make the server
/// read no more than `maxFrameBytes` and decode nothing but these fields.
///
/// Request: `EXT1`, rendition count (u8) × (size u16, format u8), placeholders (u8), max pixels
/// (u64), CPU seconds (u32), byte count (u32), the original's bytes.
/// Answer: `EXT1`, status (u8: 0 made, 1 undecodable); made: count (u8) × (size u16, format u8,
/// width u32, height u32, length u32, bytes), placeholders flag (u8) then blurhash length (u8),
/// blurhash, colour (3 bytes); undecodable: length (u16), UTF-8 reason.
public enum ThumbnailWire {
    static let magic: [UInt8] = Array("EXT1".utf8)
    /// The largest frame either side accepts: the largest original plus room for thumbnails.
    public static let maxFrameBytes = 64 << 20

    public struct Malformed: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
        /// Not an error of the frame: only its beginning has arrived.
        static let needMore = Malformed("the frame is incomplete")
    }

    // MARK: - Requests

    public static func encode(_ job: ThumbnailJob, original: UnsafeRawBufferPointer) -> [UInt8] {
        var out = magic
        out.reserveCapacity(32 + original.count)
        out.append(UInt8(job.renditions.count))
        for spec in job.renditions {
            put(UInt16(spec.size), &out)
            out.append(spec.format.rawValue)
        }
        out.append(job.placeholders ? 1 : 0)
        put(UInt64(job.maxPixels), &out)
        put(UInt32(job.cpuSeconds), &out)
        put(UInt32(original.count), &out)
        out.append(contentsOf: original)
        return out
    }

    /// A whole request frame: the job and where the original's bytes are in `frame`.
    public static func decodeRequest(_ frame: [UInt8]) throws(Malformed) -> (ThumbnailJob, Range<Int>) {
        do throws(Malformed) {
            return try decodeWholeRequest(frame)
        } catch  where error == .needMore {
            throw Malformed("the request is cut short")
        }
    }

    static func decodeWholeRequest(_ frame: [UInt8]) throws(Malformed) -> (ThumbnailJob, Range<Int>) {
        var reader = Reader(frame)
        try reader.expectMagic()
        var renditions: [ThumbnailSpec] = []
        for _ in 0..<(try reader.u8()) {
            let size = Int(try reader.u16())
            guard let format = ThumbnailFormat(rawValue: try reader.u8()) else { throw Malformed("unknown format") }
            renditions.append(ThumbnailSpec(size: size, format: format))
        }
        let placeholders = try reader.u8() != 0
        let maxPixels = try reader.u64()
        let cpuSeconds = Int(try reader.u32())
        let count = Int(try reader.u32())
        let range = try reader.skip(count)
        guard maxPixels <= UInt64(Int.max) else { throw Malformed("pixel limit out of range") }
        return (ThumbnailJob(renditions: renditions, placeholders: placeholders, maxPixels: Int(maxPixels), cpuSeconds: cpuSeconds), range)
    }

    /// The length of the request frame that starts with `header` (at least `requestHeaderLength(renditions:)` bytes).
    public static func requestLength(header: [UInt8]) throws(Malformed) -> Int? {
        guard header.count >= 5 else { return nil }
        let headerLength = 5 + Int(header[4]) * 3 + 1 + 8 + 4 + 4
        guard header.count >= headerLength else { return nil }
        var reader = Reader(header)
        reader.offset = headerLength - 4
        let count = Int(try reader.u32())
        guard count <= maxFrameBytes else { throw Malformed("request of \(count) bytes") }
        return headerLength + count
    }

    // MARK: - Answers

    public static func encode(_ outcome: ThumbnailOutcome) -> [UInt8] {
        var out = magic
        switch outcome {
        case .made(let renditions, let placeholders):
            out.append(0)
            out.append(UInt8(renditions.count))
            for rendition in renditions {
                put(UInt16(rendition.spec.size), &out)
                out.append(rendition.spec.format.rawValue)
                put(UInt32(rendition.width), &out)
                put(UInt32(rendition.height), &out)
                put(UInt32(rendition.bytes.count), &out)
                out.append(contentsOf: rendition.bytes)
            }
            if let placeholders, let color = hexColor(placeholders.dominantColor) {
                out.append(1)
                let hash = Array(placeholders.blurhash.utf8.prefix(255))
                out.append(UInt8(hash.count))
                out.append(contentsOf: hash)
                out.append(contentsOf: color)
            } else {
                out.append(0)
            }
        case .undecodable(let reason):
            out.append(1)
            let text = Array(reason.utf8.prefix(1024))
            put(UInt16(text.count), &out)
            out.append(contentsOf: text)
        }
        return out
    }

    /// Decodes an answer; nil while `bytes` holds only its beginning. Every field is checked:
    /// the helper is not trusted.
    public static func decodeAnswer(_ bytes: [UInt8]) throws(Malformed) -> ThumbnailOutcome? {
        var reader = Reader(bytes)
        do throws(Malformed) {
            try reader.expectMagic()
            switch try reader.u8() {
            case 0:
                var renditions: [Rendition] = []
                for _ in 0..<(try reader.u8()) {
                    let size = Int(try reader.u16())
                    guard let format = ThumbnailFormat(rawValue: try reader.u8()) else { throw Malformed("unknown format") }
                    let width = Int(try reader.u32())
                    let height = Int(try reader.u32())
                    let range = try reader.skip(Int(try reader.u32()))
                    guard size > 0, (1...size).contains(width), (1...size).contains(height) else {
                        throw Malformed("a \(width) × \(height) thumbnail for \(size)")
                    }
                    renditions.append(
                        Rendition(spec: ThumbnailSpec(size: size, format: format), width: width, height: height, bytes: Array(bytes[range])))
                }
                var placeholders: Placeholders?
                if try reader.u8() == 1 {
                    let hash = bytes[try reader.skip(Int(try reader.u8()))]
                    let color = bytes[try reader.skip(3)]
                    guard Blurhash.isWellFormed(hash) else { throw Malformed("not a blurhash") }
                    placeholders = Placeholders(
                        blurhash: String(decoding: hash, as: UTF8.self), dominantColor: "#" + color.map(hexByte).joined())
                }
                return .made(renditions, placeholders)
            case 1:
                let text = bytes[try reader.skip(Int(try reader.u16()))]
                return .undecodable(String(decoding: text, as: UTF8.self))
            default:
                throw Malformed("unknown status")
            }
        } catch  where error == .needMore {
            return nil
        }
    }

    // MARK: - Bytes

    static func put<T: FixedWidthInteger>(_ value: T, _ out: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
    }

    static func hexColor(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count == 7, digits[0] == UInt8(ascii: "#") else { return nil }
        var color: [UInt8] = []
        for index in stride(from: 1, to: 7, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            color.append(byte)
        }
        return color
    }

    static func hexByte(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 15)]], as: UTF8.self)
    }

    struct Reader {
        let bytes: [UInt8]
        var offset = 0
        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func skip(_ count: Int) throws(Malformed) -> Range<Int> {
            guard count >= 0, count <= ThumbnailWire.maxFrameBytes else { throw Malformed("a field of \(count) bytes") }
            guard bytes.count - offset >= count else { throw .needMore }
            defer { offset += count }
            return offset..<offset + count
        }

        mutating func integer<T: FixedWidthInteger>(_: T.Type) throws(Malformed) -> T {
            let range = try skip(MemoryLayout<T>.size)
            var value: T = 0
            for (shift, index) in range.enumerated() { value |= T(bytes[index]) << (8 * shift) }
            return value
        }

        mutating func u8() throws(Malformed) -> UInt8 { try integer(UInt8.self) }
        mutating func u16() throws(Malformed) -> UInt16 { try integer(UInt16.self) }
        mutating func u32() throws(Malformed) -> UInt32 { try integer(UInt32.self) }
        mutating func u64() throws(Malformed) -> UInt64 { try integer(UInt64.self) }

        mutating func expectMagic() throws(Malformed) {
            guard bytes[try skip(4)].elementsEqual(ThumbnailWire.magic) else { throw Malformed("not a thumbnail frame") }
        }
    }
}
