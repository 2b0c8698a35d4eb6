/// The header of one ISO base media file format box (ISO/IEC 14496-12 §4.2), as found in a
/// buffer that may hold only a prefix of the file.
struct ISOBox {
    /// The four-character type as a big-endian number (`ftyp` is 0x66747970).
    let type: UInt32
    /// Where the box, and its header, start.
    let start: Int
    /// Where its content starts, after the 8- or 16-byte header.
    let contentStart: Int
    /// Where it ends as declared; may lie beyond the buffer. `UInt64.max` at the top level
    /// means "to the end of the file".
    let end: UInt64

    static func fourCC(_ text: StaticString) -> UInt32 {
        precondition(text.utf8CodeUnitCount == 4)
        return text.withUTF8Buffer { $0.reduce(0) { $0 << 8 | UInt32($1) } }
    }

    /// Reads the box header at `offset` inside a parent that ends at `parentEnd`.
    ///
    /// A size of 0 means "to the end of the parent"; a size of 1 means a 64-bit size follows
    /// the type. A box must lie within its parent; one that lies past the buffer is not an
    /// error until its missing bytes are read.
    init(at offset: Int, parentEnd: UInt64, _ reader: ByteReader) throws(ImageError) {
        guard UInt64(offset) + 8 <= parentEnd else {
            throw .malformed(.heic, "a box header runs past its parent box.", at: offset)
        }
        let size32 = try reader.u32be(offset)
        type = try reader.u32be(offset + 4)
        start = offset
        let size: UInt64
        switch size32 {
        case 0:
            contentStart = offset + 8
            end = parentEnd
            return
        case 1:
            guard UInt64(offset) + 16 <= parentEnd else {
                throw .malformed(.heic, "a box header runs past its parent box.", at: offset)
            }
            size = try reader.u64be(offset + 8)
            contentStart = offset + 16
            guard size >= 16 else { throw .malformed(.heic, "a 64-bit box size is smaller than its header.", at: offset) }
        case 2..<8:
            throw .malformed(.heic, "a box size is smaller than its header.", at: offset)
        default:
            size = UInt64(size32)
            contentStart = offset + 8
        }
        let (end, overflow) = UInt64(offset).addingReportingOverflow(size)
        guard !overflow, end <= parentEnd else {
            throw .malformed(.heic, "a box runs past its parent box.", at: offset)
        }
        self.end = end
    }

    /// Throws `malformed` unless `length` bytes at `offset` lie inside this box; reading them
    /// may still find them past the buffer (`truncated`).
    func requireField(_ length: Int, at offset: Int) throws(ImageError) {
        guard UInt64(offset) + UInt64(length) <= end else {
            throw .malformed(.heic, "a box is too short for its fields.", at: start)
        }
    }
}

/// The boxes inside a container, one after the other.
///
/// The number of boxes is capped so that a hostile file full of 8-byte boxes cannot keep the
/// inspector busy; the callers descend a fixed path (meta → iprp → ipco), so there is no
/// recursion whose depth a file could choose.
struct ISOBoxIterator {
    static let maxBoxes = 4096

    let reader: ByteReader
    let end: UInt64
    private var offset: UInt64
    private var count = 0

    init(_ reader: ByteReader, from start: Int, to end: UInt64) {
        self.reader = reader
        self.offset = UInt64(start)
        self.end = end
    }

    /// The children of `box`, after `skip` bytes of its own fields (4 for a FullBox).
    init(_ reader: ByteReader, childrenOf box: ISOBox, skip: Int = 0) throws(ImageError) {
        try box.requireField(skip, at: box.contentStart)
        self.init(reader, from: box.contentStart + skip, to: box.end)
    }

    mutating func next() throws(ImageError) -> ISOBox? {
        guard offset < end else { return nil }
        guard offset <= UInt64(reader.count) else { throw .truncated(.heic, at: reader.count) }
        count += 1
        guard count <= Self.maxBoxes else {
            throw .malformed(.heic, "a box holds more than \(Self.maxBoxes) boxes.", at: Int(offset))
        }
        let box = try ISOBox(at: Int(offset), parentEnd: end, reader)
        offset = box.end
        return box
    }
}
