/// A QR code (ISO/IEC 18004) of bytes in byte mode, error correction level M, in the smallest
/// version (1 to 40) that holds them, drawn as SVG: how the server shows an `otpauth://` URI to an
/// authenticator app's camera without a library or a third party.
///
/// The steps: the data codewords (mode, count, bytes, terminator, padding), split in blocks each
/// followed by its Reed–Solomon codewords (GF(2⁸), polynomial 0x11D), interleaved; the function
/// patterns (finders, separators, timing, alignment, format and version information); the
/// codewords placed in the zigzag; then of the 8 masks the one with the lowest penalty (the
/// standard's four rules).
public struct QRCode: Sendable {
    /// Modules per side: 17 + 4 × version.
    public let size: Int
    public let version: Int
    private var modules: [Bool]
    private var isFunction: [Bool]

    /// More bytes than version 40 holds at level M (2,331).
    public struct TooLong: Error, Sendable {}

    public init(bytes: [UInt8]) throws {
        guard let version = (1...40).first(where: { Self.dataCodewords($0) * 8 >= 4 + Self.countBits($0) + 8 * bytes.count }) else {
            throw TooLong()
        }
        self.version = version
        size = 17 + 4 * version
        modules = Array(repeating: false, count: size * size)
        isFunction = Array(repeating: false, count: size * size)

        // Mode 0100 (bytes), the count, the bytes, up to 4 zero bits, zeros to a byte, then the
        // alternating pad bytes.
        var bits: [Bool] = []
        func append(_ value: Int, _ count: Int) {
            for index in (0..<count).reversed() { bits.append((value >> index) & 1 == 1) }
        }
        append(0b0100, 4)
        append(bytes.count, Self.countBits(version))
        for byte in bytes { append(Int(byte), 8) }
        let capacity = Self.dataCodewords(version) * 8
        append(0, min(4, capacity - bits.count))
        append(0, (8 - bits.count % 8) % 8)
        var pad = 0xEC
        while bits.count < capacity {
            append(pad, 8)
            pad ^= 0xEC ^ 0x11
        }
        var data = [UInt8](repeating: 0, count: bits.count / 8)
        for (index, bit) in bits.enumerated() where bit { data[index >> 3] |= 0x80 >> UInt8(index & 7) }

        drawFunctionPatterns()
        drawCodewords(Self.withErrorCorrection(data, version: version))
        var best = 0
        var lowest = Int.max
        for mask in 0..<8 {
            applyMask(mask)
            drawFormatBits(mask: mask)
            let penalty = penaltyScore()
            if penalty < lowest {
                (best, lowest) = (mask, penalty)
            }
            applyMask(mask)
        }
        applyMask(best)
        drawFormatBits(mask: best)
    }

    /// Whether the module at column `x`, row `y` is dark.
    public func isDark(x: Int, y: Int) -> Bool { modules[y * size + x] }

    /// The code as an SVG document: one path of unit squares on a white square with a quiet zone
    /// of `border` modules, scaled by the viewer (`width`/`height` say `pixels`).
    public func svg(border: Int = 4, pixels: Int = 256) -> String {
        let side = size + 2 * border
        var path = ""
        for y in 0..<size {
            for x in 0..<size where isDark(x: x, y: y) {
                path += "M\(x + border),\(y + border)h1v1h-1z"
            }
        }
        return """
            <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 \(side) \(side)" width="\(pixels)" height="\(pixels)" \
            shape-rendering="crispEdges"><rect width="\(side)" height="\(side)" fill="#ffffff"/><path d="\(path)" fill="#000000"/></svg>
            """
    }

    // MARK: - Capacities (level M)

    /// Error correction codewords per block, by version (index 0 unused).
    static let eccPerBlock = [
        -1, 10, 16, 26, 18, 24, 16, 18, 22, 22, 26, 30, 22, 22, 24, 24, 28, 28, 26, 26, 26, 26, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28, 28,
        28, 28, 28, 28, 28, 28, 28, 28,
    ]
    /// Blocks, by version (index 0 unused).
    static let blocks = [
        -1, 1, 1, 1, 2, 2, 4, 4, 4, 5, 5, 5, 8, 9, 9, 10, 10, 11, 13, 14, 16, 17, 17, 18, 20, 21, 23, 25, 26, 28, 29, 31, 33, 35, 37, 38,
        40, 43, 45, 47, 49,
    ]

    /// The bits of the count in byte mode.
    static func countBits(_ version: Int) -> Int { version < 10 ? 8 : 16 }

    /// The modules left for codewords once the function patterns are drawn.
    static func rawDataModules(_ version: Int) -> Int {
        var result = (16 * version + 128) * version + 64
        if version >= 2 {
            let alignments = version / 7 + 2
            result -= (25 * alignments - 10) * alignments - 55
            if version >= 7 { result -= 36 }
        }
        return result
    }

    static func dataCodewords(_ version: Int) -> Int {
        rawDataModules(version) / 8 - eccPerBlock[version] * blocks[version]
    }

    // MARK: - Reed–Solomon

    /// The data split in blocks (the last ones a codeword longer), each followed by its error
    /// correction codewords, then interleaved codeword by codeword.
    static func withErrorCorrection(_ data: [UInt8], version: Int) -> [UInt8] {
        let count = blocks[version]
        let eccLength = eccPerBlock[version]
        let raw = rawDataModules(version) / 8
        let shortBlocks = count - raw % count
        let shortLength = raw / count
        let divisor = reedSolomonDivisor(degree: eccLength)
        var split: [[UInt8]] = []
        var start = 0
        for index in 0..<count {
            let length = shortLength - eccLength + (index < shortBlocks ? 0 : 1)
            var block = Array(data[start..<start + length])
            start += length
            let ecc = reedSolomonRemainder(block, divisor)
            if index < shortBlocks { block.append(0) }
            split.append(block + ecc)
        }
        var result: [UInt8] = []
        for position in 0..<split[0].count {
            for (index, block) in split.enumerated() where position != shortLength - eccLength || index >= shortBlocks {
                result.append(block[position])
            }
        }
        return result
    }

    static func reedSolomonDivisor(degree: Int) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: degree)
        result[degree - 1] = 1
        var root: UInt8 = 1
        for _ in 0..<degree {
            for index in 0..<degree {
                result[index] = multiply(result[index], root)
                if index + 1 < degree { result[index] ^= result[index + 1] }
            }
            root = multiply(root, 0x02)
        }
        return result
    }

    static func reedSolomonRemainder(_ data: [UInt8], _ divisor: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: divisor.count)
        for byte in data {
            let factor = byte ^ result.removeFirst()
            result.append(0)
            for index in result.indices { result[index] ^= multiply(divisor[index], factor) }
        }
        return result
    }

    /// The product in GF(2⁸) modulo x⁸ + x⁴ + x³ + x² + 1.
    static func multiply(_ x: UInt8, _ y: UInt8) -> UInt8 {
        var product = 0
        for bit in (0..<8).reversed() {
            product = (product << 1) ^ ((product >> 7) * 0x11D)
            product ^= ((Int(y) >> bit) & 1) * Int(x)
        }
        return UInt8(product)
    }

    // MARK: - Drawing

    private mutating func set(_ x: Int, _ y: Int, _ dark: Bool) {
        modules[y * size + x] = dark
        isFunction[y * size + x] = true
    }

    private mutating func drawFunctionPatterns() {
        for index in 0..<size {
            set(6, index, index % 2 == 0)
            set(index, 6, index % 2 == 0)
        }
        for (x, y) in [(3, 3), (size - 4, 3), (3, size - 4)] {
            for dy in -4...4 {
                for dx in -4...4 where (0..<size).contains(x + dx) && (0..<size).contains(y + dy) {
                    let distance = max(abs(dx), abs(dy))
                    set(x + dx, y + dy, distance != 2 && distance != 4)
                }
            }
        }
        let positions = alignmentPositions()
        for (i, x) in positions.enumerated() {
            for (j, y) in positions.enumerated() {
                // Not where a finder is.
                if (i == 0 && j == 0) || (i == 0 && j == positions.count - 1) || (i == positions.count - 1 && j == 0) { continue }
                for dy in -2...2 {
                    for dx in -2...2 { set(x + dx, y + dy, max(abs(dx), abs(dy)) != 1) }
                }
            }
        }
        drawFormatBits(mask: 0)  // reserved now, drawn again with the chosen mask
        if version >= 7 {
            var remainder = version
            for _ in 0..<12 { remainder = (remainder << 1) ^ ((remainder >> 11) * 0x1F25) }
            let bits = version << 12 | remainder
            for index in 0..<18 {
                let dark = (bits >> index) & 1 == 1
                let (a, b) = (size - 11 + index % 3, index / 3)
                set(a, b, dark)
                set(b, a, dark)
            }
        }
    }

    /// The centres of the alignment patterns along each axis.
    private func alignmentPositions() -> [Int] {
        guard version > 1 else { return [] }
        let count = version / 7 + 2
        let step = (version * 8 + count * 3 + 5) / (count * 4 - 4) * 2
        var result = [6]
        var position = size - 7
        var tail: [Int] = []
        for _ in 1..<count {
            tail.insert(position, at: 0)
            position -= step
        }
        result += tail
        return result
    }

    /// Level M (00) and the mask, with their BCH code, XORed with 101010000010010, in both copies.
    private mutating func drawFormatBits(mask: Int) {
        let data = 0b00 << 3 | mask
        var remainder = data
        for _ in 0..<10 { remainder = (remainder << 1) ^ ((remainder >> 9) * 0x537) }
        let bits = (data << 10 | remainder) ^ 0x5412
        func bit(_ index: Int) -> Bool { (bits >> index) & 1 == 1 }
        for index in 0...5 { set(8, index, bit(index)) }
        set(8, 7, bit(6))
        set(8, 8, bit(7))
        set(7, 8, bit(8))
        for index in 9..<15 { set(14 - index, 8, bit(index)) }
        for index in 0..<8 { set(size - 1 - index, 8, bit(index)) }
        for index in 8..<15 { set(8, size - 15 + index, bit(index)) }
        set(8, size - 8, true)
    }

    /// The codewords' bits, two columns at a time from the right, up then down, skipping the
    /// vertical timing pattern and every function module.
    private mutating func drawCodewords(_ codewords: [UInt8]) {
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            for vertical in 0..<size {
                for column in 0..<2 {
                    let x = right - column
                    let upward = (right + 1) & 2 == 0
                    let y = upward ? size - 1 - vertical : vertical
                    if !isFunction[y * size + x], index < codewords.count * 8 {
                        modules[y * size + x] = (codewords[index >> 3] >> UInt8(7 - (index & 7))) & 1 == 1
                        index += 1
                    }
                }
            }
            right -= 2
        }
    }

    private mutating func applyMask(_ mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] {
                let invert: Bool
                switch mask {
                case 0: invert = (x + y) % 2 == 0
                case 1: invert = y % 2 == 0
                case 2: invert = x % 3 == 0
                case 3: invert = (x + y) % 3 == 0
                case 4: invert = (x / 3 + y / 2) % 2 == 0
                case 5: invert = x * y % 2 + x * y % 3 == 0
                case 6: invert = (x * y % 2 + x * y % 3) % 2 == 0
                default: invert = ((x + y) % 2 + x * y % 3) % 2 == 0
                }
                if invert { modules[y * size + x].toggle() }
            }
        }
    }

    /// The standard's penalty: runs of five or more, 2 × 2 blocks, finder-like patterns, and
    /// the dark share's distance from half.
    private func penaltyScore() -> Int {
        var score = 0
        let finderLike: [[Bool]] = [
            [true, false, true, true, true, false, true, false, false, false, false],
            [false, false, false, false, true, false, true, true, true, false, true],
        ]
        for horizontal in [true, false] {
            for line in 0..<size {
                var run = 0
                var previous = false
                var cells: [Bool] = []
                for position in 0..<size {
                    let dark = horizontal ? isDark(x: position, y: line) : isDark(x: line, y: position)
                    cells.append(dark)
                    if position > 0 && dark == previous {
                        run += 1
                    } else {
                        if run >= 5 { score += 3 + run - 5 }
                        run = 1
                    }
                    previous = dark
                }
                if run >= 5 { score += 3 + run - 5 }
                if cells.count >= 11 {
                    for start in 0...(cells.count - 11) where finderLike.contains(where: { $0 == Array(cells[start..<start + 11]) }) {
                        score += 40
                    }
                }
            }
        }
        var dark = 0
        for y in 0..<size {
            for x in 0..<size {
                if isDark(x: x, y: y) { dark += 1 }
                if x + 1 < size, y + 1 < size {
                    let color = isDark(x: x, y: y)
                    if color == isDark(x: x + 1, y: y) && color == isDark(x: x, y: y + 1) && color == isDark(x: x + 1, y: y + 1) { score += 3 }
                }
            }
        }
        let total = size * size
        score += ((abs(dark * 20 - total * 10) + total - 1) / total - 1) * 10
        return score
    }
}
