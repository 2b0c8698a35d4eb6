extension ImageInspector {
    /// Brands that say "HEVC-coded HEIF images or sequences". `mif1` and `msf1` alone are not
    /// enough: AVIF files carry them too, and would otherwise pass as `image/heic`.
    static let heicBrands: Set<UInt32> = [
        ISOBox.fourCC("heic"), ISOBox.fourCC("heix"), ISOBox.fourCC("hevc"),
        ISOBox.fourCC("hevx"), ISOBox.fourCC("heim"), ISOBox.fourCC("heis"),
    ]

    /// An ftyp box larger than this is not a real one.
    static let maxFileTypeBoxSize: UInt64 = 4096

    /// HEIC: the `ftyp` box with a HEIC brand, then `meta` (a FullBox) → `iprp` → `ipco`, whose
    /// `ispe` property of the primary item (named by `pitm` and associated by `ipma`) gives the
    /// size. Without `pitm` or `ipma`, the first `ispe` is used.
    ///
    /// The primary item matters: an iPhone photo is a grid of 512×512 tiles, and the tiles'
    /// `ispe` comes before the grid's. `pitm` is used when it precedes `iprp`, as every known
    /// writer orders them; nothing after `iprp` is read.
    static func heicSize(_ reader: ByteReader) throws(ImageError) -> Size {
        guard try hasHEICBrand(reader) else {
            throw mismatch(declared: .heic, detected: ImageFormat.sniff(reader.bytes))
        }
        var top = ISOBoxIterator(reader, from: 0, to: .max)
        _ = try top.next()  // ftyp, checked above
        while let box = try top.next() {
            if box.type == ISOBox.fourCC("meta") { return try metaSize(box, reader) }
        }
        throw .malformed(.heic, "there is no meta box.")
    }

    /// Whether the leading `ftyp` box lists a HEIC brand, as major or compatible brand.
    static func hasHEICBrand(_ reader: ByteReader) throws(ImageError) -> Bool {
        let ftyp = try ISOBox(at: 0, parentEnd: .max, reader)
        guard ftyp.type == ISOBox.fourCC("ftyp") else { return false }
        guard ftyp.end - UInt64(ftyp.start) <= maxFileTypeBoxSize else {
            throw .malformed(.heic, "the ftyp box is too large.", at: 0)
        }
        // Major brand, minor version, then compatible brands to the end of the box.
        try ftyp.requireField(8, at: ftyp.contentStart)
        let end = Int(ftyp.end)
        try reader.require(end - ftyp.contentStart, at: ftyp.contentStart)
        if heicBrands.contains(try reader.u32be(ftyp.contentStart)) { return true }
        var offset = ftyp.contentStart + 8
        while offset + 4 <= end {
            if heicBrands.contains(try reader.u32be(offset)) { return true }
            offset += 4
        }
        return false
    }

    private static func metaSize(_ meta: ISOBox, _ reader: ByteReader) throws(ImageError) -> Size {
        var primaryItem: UInt32?
        var children = try ISOBoxIterator(reader, childrenOf: meta, skip: 4)
        while let box = try children.next() {
            switch box.type {
            case ISOBox.fourCC("pitm"):
                try box.requireField(4, at: box.contentStart)
                if try reader.u8(box.contentStart) == 0 {
                    try box.requireField(2, at: box.contentStart + 4)
                    primaryItem = UInt32(try reader.u16be(box.contentStart + 4))
                } else {
                    try box.requireField(4, at: box.contentStart + 4)
                    primaryItem = try reader.u32be(box.contentStart + 4)
                }
            case ISOBox.fourCC("iprp"):
                return try propertiesSize(box, primaryItem: primaryItem, reader)
            default:
                continue
            }
        }
        throw .malformed(.heic, "the meta box has no iprp box.", at: meta.start)
    }

    private static func propertiesSize(_ iprp: ISOBox, primaryItem: UInt32?, _ reader: ByteReader) throws(ImageError) -> Size {
        var ipco: ISOBox?
        var primaryProperties: [Int] = []
        var children = try ISOBoxIterator(reader, childrenOf: iprp)
        while let box = try children.next() {
            if box.type == ISOBox.fourCC("ipco"), ipco == nil {
                ipco = box
            } else if box.type == ISOBox.fourCC("ipma"), let primaryItem, primaryProperties.isEmpty {
                primaryProperties = try associations(of: primaryItem, in: box, reader)
            }
        }
        guard let ipco else { throw .malformed(.heic, "the iprp box has no ipco box.", at: iprp.start) }

        // Property indices are 1-based positions among ipco's children.
        var first: Size?
        var index = 0
        var properties = try ISOBoxIterator(reader, childrenOf: ipco)
        while let box = try properties.next() {
            index += 1
            guard box.type == ISOBox.fourCC("ispe") else { continue }
            // FullBox header, then 32-bit width and height.
            try box.requireField(12, at: box.contentStart)
            let size = Size(try reader.u32be(box.contentStart + 4), try reader.u32be(box.contentStart + 8))
            if primaryProperties.contains(index) { return size }
            if first == nil { first = size }
        }
        guard let first else { throw .malformed(.heic, "the ipco box has no ispe property.", at: ipco.start) }
        return first
    }

    /// The property indices that an `ipma` box associates with `item`.
    private static func associations(of item: UInt32, in ipma: ISOBox, _ reader: ByteReader) throws(ImageError) -> [Int] {
        var offset = ipma.contentStart
        try ipma.requireField(8, at: offset)
        let version = try reader.u8(offset)
        let wideIndices = try reader.u8(offset + 3) & 1 == 1
        let entryCount = try reader.u32be(offset + 4)
        offset += 8
        // Each entry takes at least 3 bytes inside the box, so a huge count fails fast.
        for _ in 0..<entryCount {
            let id: UInt32
            if version < 1 {
                try ipma.requireField(3, at: offset)
                id = UInt32(try reader.u16be(offset))
                offset += 2
            } else {
                try ipma.requireField(5, at: offset)
                id = try reader.u32be(offset)
                offset += 4
            }
            let count = Int(try reader.u8(offset))
            offset += 1
            let width = wideIndices ? 2 : 1
            try ipma.requireField(count * width, at: offset)
            guard id == item else {
                offset += count * width
                continue
            }
            var indices: [Int] = []
            for _ in 0..<count {
                // The top bit marks the association as essential.
                indices.append(wideIndices ? Int(try reader.u16be(offset) & 0x7FFF) : Int(try reader.u8(offset) & 0x7F))
                offset += width
            }
            return indices
        }
        return []
    }
}
