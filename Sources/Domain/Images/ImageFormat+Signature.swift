extension ImageFormat {
    /// The supported format whose signature the bytes start with, or nil; nothing past the
    /// signature (and, for HEIC, the `ftyp` brands) is checked.
    public static func sniff(_ bytes: UnsafeRawBufferPointer) -> ImageFormat? {
        let candidates: [ImageFormat] = [.png, .gif, .jpeg, .webp, .heic]
        return candidates.first { format in
            let reader = ByteReader(bytes: bytes, format: format)
            guard format.signature(in: reader) == .match else { return false }
            guard format == .heic else { return true }
            // A cut-short or broken ftyp is simply "not recognised" here; inspect() reports why.
            do { return try ImageInspector.hasHEICBrand(reader) } catch { return false }
        }
    }

    /// The supported format whose signature the bytes start with, or nil.
    public static func sniff(_ bytes: [UInt8]) -> ImageFormat? {
        bytes.withUnsafeBytes { sniff($0) }
    }

    /// Whether the bytes start with this format's magic numbers, or could if they went on.
    func signature(in reader: ByteReader) -> SignatureMatch {
        let patterns: [[UInt8?]]
        switch self {
        case .png: patterns = [[0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]]
        case .gif: patterns = [Array("GIF87a".utf8), Array("GIF89a".utf8)]
        // SOI and the 0xFF that starts the next marker.
        case .jpeg: patterns = [[0xFF, 0xD8, 0xFF]]
        case .webp: patterns = [Array("RIFF".utf8) + [nil, nil, nil, nil] + Array("WEBP".utf8)]
        // An ISO BMFF file starts with its ftyp box; the brands are checked by the inspector.
        case .heic: patterns = [[nil, nil, nil, nil] + Array("ftyp".utf8)]
        }
        return patterns.map { SignatureMatch(reader, $0) }.max() ?? .mismatch
    }
}

/// How the start of some bytes compares with a signature.
enum SignatureMatch: Comparable {
    /// A byte differs.
    case mismatch
    /// Every byte present matches, but the bytes end inside the signature.
    case truncated
    case match

    /// Compares against a pattern in which nil matches any byte.
    init(_ reader: ByteReader, _ pattern: [UInt8?]) {
        for (offset, expected) in pattern.enumerated() {
            guard offset < reader.count else { self = .truncated; return }
            if let expected, reader.bytes[offset] != expected { self = .mismatch; return }
        }
        self = .match
    }
}
