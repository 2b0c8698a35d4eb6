/// The layout of a ZIP archive (APPNOTE 6.3.10) written as a stream: every entry stored (no
/// compression: the originals are JPEG, PNG, WebP, HEIC and a little JSON), its CRC-32 computed as
/// its bytes pass and written after them in a data descriptor (general-purpose bit 3), names in
/// UTF-8 (bit 11). The sizes are known before the first byte, so the archive's length is too
/// (a `Content-Length`), and nothing but the entry being written is ever held.
///
/// No ZIP64: an archive is at most 4 GiB − 1 and 65,534 entries (`ZipError.tooLarge`).
public struct ZipLayout: Sendable {
    public struct Entry: Sendable {
        public let name: String
        public let size: Int

        public init(name: String, size: Int) {
            self.name = name
            self.size = size
        }
    }

    public let entries: [Entry]
    /// Where each entry's local header starts.
    public let offsets: [Int]
    /// Where the central directory starts, and the whole length.
    public let centralDirectoryOffset: Int
    public let length: Int
    /// The DOS date and time written for every entry.
    let dosTime: UInt16
    let dosDate: UInt16

    public init(_ entries: [Entry], modified: (year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int)) throws(ZipError) {
        guard entries.count <= 65_534 else { throw ZipError.tooLarge("\(entries.count) entries; at most 65,534") }
        var offsets: [Int] = []
        var position = 0
        for entry in entries {
            offsets.append(position)
            position += ZipLayout.localHeaderSize(entry) + entry.size + ZipLayout.descriptorSize
        }
        let directory = entries.reduce(0) { $0 + 46 + $1.name.utf8.count }
        let length = position + directory + 22
        guard length <= Int(UInt32.max) else { throw ZipError.tooLarge("\(length) bytes; at most 4 GiB") }
        self.entries = entries
        self.offsets = offsets
        self.centralDirectoryOffset = position
        self.length = length
        dosTime = UInt16(modified.hour << 11 | modified.minute << 5 | modified.second / 2)
        dosDate = UInt16(max(0, modified.year - 1980) << 9 | modified.month << 5 | modified.day)
    }

    static let descriptorSize = 16
    static let flags: UInt16 = 0x0808  // data descriptor, UTF-8 names

    static func localHeaderSize(_ entry: Entry) -> Int { 30 + entry.name.utf8.count }

    /// The local header of entry `index`: CRC and sizes zero, as bit 3 has them.
    public func localHeader(_ index: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(ZipLayout.localHeaderSize(entries[index]))
        bytes.append32(0x0403_4b50)
        bytes.append16(20)
        bytes.append16(ZipLayout.flags)
        bytes.append16(0)  // stored
        bytes.append16(dosTime)
        bytes.append16(dosDate)
        bytes.append32(0)
        bytes.append32(0)
        bytes.append32(0)
        bytes.append16(UInt16(entries[index].name.utf8.count))
        bytes.append16(0)
        bytes += entries[index].name.utf8
        return bytes
    }

    /// The data descriptor that follows entry `index`'s bytes.
    public func descriptor(_ index: Int, crc: UInt32) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.append32(0x0807_4b50)
        bytes.append32(crc)
        bytes.append32(UInt32(entries[index].size))
        bytes.append32(UInt32(entries[index].size))
        return bytes
    }

    /// The central directory and its end record, once every entry's CRC is known.
    public func centralDirectory(crcs: [UInt32]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (index, entry) in entries.enumerated() {
            bytes.append32(0x0201_4b50)
            bytes.append16(0x031E)  // made by: Unix, 3.0
            bytes.append16(20)
            bytes.append16(ZipLayout.flags)
            bytes.append16(0)
            bytes.append16(dosTime)
            bytes.append16(dosDate)
            bytes.append32(crcs[index])
            bytes.append32(UInt32(entry.size))
            bytes.append32(UInt32(entry.size))
            bytes.append16(UInt16(entry.name.utf8.count))
            bytes.append16(0)  // extra
            bytes.append16(0)  // comment
            bytes.append16(0)  // disk
            bytes.append16(0)  // internal attributes
            bytes.append32(UInt32(0o100644) << 16)  // a regular file, rw-r--r--
            bytes.append32(UInt32(offsets[index]))
            bytes += entry.name.utf8
        }
        let directorySize = bytes.count
        bytes.append32(0x0605_4b50)
        bytes.append16(0)
        bytes.append16(0)
        bytes.append16(UInt16(entries.count))
        bytes.append16(UInt16(entries.count))
        bytes.append32(UInt32(directorySize))
        bytes.append32(UInt32(centralDirectoryOffset))
        bytes.append16(0)
        return bytes
    }
}

/// An archive that cannot be written as a plain ZIP.
public enum ZipError: Error, Sendable, Equatable {
    case tooLarge(String)
}

/// CRC-32 (ISO-HDLC: zlib's, ZIP's and PNG's), updated chunk by chunk.
public struct CRC32: Sendable {
    private static let table: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
        return crc
    }

    private var state: UInt32 = 0xFFFF_FFFF

    public init() {}

    public mutating func update(_ bytes: some Sequence<UInt8>) {
        var crc = state
        for byte in bytes { crc = CRC32.table[Int(UInt8(truncatingIfNeeded: crc) ^ byte)] ^ (crc >> 8) }
        state = crc
    }

    public var value: UInt32 { state ^ 0xFFFF_FFFF }

    /// The checksum of `bytes` at once (a PNG chunk's).
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }
}

extension [UInt8] {
    mutating func append16(_ value: UInt16) {
        append(UInt8(value & 0xFF))
        append(UInt8(value >> 8))
    }

    mutating func append32(_ value: UInt32) {
        for shift in stride(from: 0, to: 32, by: 8) { append(UInt8((value >> UInt32(shift)) & 0xFF)) }
    }
}
