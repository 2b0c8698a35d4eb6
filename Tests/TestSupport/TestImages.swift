import Files
import Foundation

/// Real image files made for tests with libvips' command line (`vips`, Debian's `libvips-tools`),
/// from pixels the tests choose, and read back into pixels the same way.
public enum TestImages {
    /// 8-bit RGB pixels, row by row.
    public struct Pixels: Sendable, Equatable {
        public let width: Int
        public let height: Int
        public var rgb: [UInt8]

        public init(width: Int, height: Int, _ color: (Int, Int) -> (UInt8, UInt8, UInt8)) {
            self.width = width
            self.height = height
            var rgb: [UInt8] = []
            rgb.reserveCapacity(width * height * 3)
            for y in 0..<height {
                for x in 0..<width {
                    let (r, g, b) = color(x, y)
                    rgb += [r, g, b]
                }
            }
            self.rgb = rgb
        }

        public func at(_ x: Int, _ y: Int) -> (r: Int, g: Int, b: Int) {
            let offset = (y * width + x) * 3
            return (Int(rgb[offset]), Int(rgb[offset + 1]), Int(rgb[offset + 2]))
        }

        /// Binary PPM (P6).
        public var ppm: [UInt8] { Array("P6\n\(width) \(height)\n255\n".utf8) + rgb }
    }

    /// The built `exosphere` executable next to the test bundle.
    public static func exosphereExecutable() -> String? { builtExecutable("exosphere") }

    /// The thumbnail helper built beside the tests (`exosphere-thumbnailer`).
    public static func thumbnailerExecutable() -> String? { builtExecutable("exosphere-thumbnailer") }

    private static func builtExecutable(_ name: String) -> String? {
        var candidates: [URL] = []
        let bundle = Bundle.main.bundleURL
        candidates.append(bundle.appendingPathComponent(name))
        candidates.append(bundle.deletingLastPathComponent().appendingPathComponent(name))
        let argv0 = URL(fileURLWithPath: CommandLine.arguments[0])
        candidates.append(argv0.deletingLastPathComponent().appendingPathComponent(name))
        candidates.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug/" + name))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }?.path
    }

    /// Encodes pixels: `suffix` is a file name suffix with `vips` save options, `.jpg[Q=90]`.
    public static func encode(_ pixels: Pixels, as suffix: String) throws -> [UInt8] {
        let directory = try FileSystem.createTemporaryDirectory(prefix: "test-images")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(pixels.ppm).write(to: URL(fileURLWithPath: directory + "/in.ppm"))
        _ = try run("/usr/bin/vips", ["copy", "in.ppm", "out" + suffix], in: directory)
        let name = suffix.split(separator: "[").first.map(String.init) ?? suffix
        return try FileReader.bytes(directory + "/out" + name, limit: 64 << 20)
    }

    /// Runs `vips` operation arguments where `in` and `out` name files, and returns `out`.
    public static func vips(_ arguments: [String], output: String) throws -> [UInt8] {
        let directory = try FileSystem.createTemporaryDirectory(prefix: "test-images")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try run("/usr/bin/vips", arguments, in: directory)
        return try FileReader.bytes(directory + "/" + output, limit: 64 << 20)
    }

    /// 10 000 × 10 000 16-bit RGBA, 0.4 MB of PNG within the default pixel limit, that takes
    /// a decoder over two seconds: the file that makes a decoder spin. Made once per run.
    public static func slowPNG() throws -> [UInt8] { try slow.get() }

    private static let slow = Result { () throws -> [UInt8] in
        let directory = try FileSystem.createTemporaryDirectory(prefix: "slow-png")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        _ = try run("/usr/bin/vips", ["black", "b.v", "10000", "10000", "--bands", "4"], in: directory)
        _ = try run("/usr/bin/vips", ["cast", "b.v", "slow.png", "ushort"], in: directory)
        return try FileReader.bytes(directory + "/slow.png", limit: 16 << 20)
    }

    /// Decodes any image `vips` reads into 8-bit RGB (an alpha channel is dropped).
    public static func decode(_ bytes: [UInt8]) throws -> Pixels {
        let directory = try FileSystem.createTemporaryDirectory(prefix: "test-images")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/in"))
        _ = try run("/usr/bin/vips", ["colourspace", "in", "srgb.v", "srgb"], in: directory)
        _ = try run("/usr/bin/vips", ["extract_band", "srgb.v", "rgb.v", "0", "--n", "3"], in: directory)
        _ = try run("/usr/bin/vips", ["cast", "rgb.v", "out.ppm", "uchar"], in: directory)
        let ppm = try FileReader.bytes(directory + "/out.ppm", limit: 256 << 20)
        // "P6\n", "#comment\n" lines, "<w> <h>\n255\n", then the pixels.
        var fields: [Int] = []
        var index = 2
        while fields.count < 3 {
            while ppm[index] == 0x0A || ppm[index] == 0x20 { index += 1 }
            if ppm[index] == UInt8(ascii: "#") {
                while ppm[index] != 0x0A { index += 1 }
                continue
            }
            var value = 0
            while ppm[index] >= 0x30 && ppm[index] <= 0x39 {
                value = value * 10 + Int(ppm[index] - 0x30)
                index += 1
            }
            fields.append(value)
        }
        index += 1
        var pixels = Pixels(width: fields[0], height: fields[1]) { _, _ in (0, 0, 0) }
        pixels.rgb = Array(ppm[index..<index + fields[0] * fields[1] * 3])
        return pixels
    }

    /// A JPEG with an EXIF APP1 segment that holds only an Orientation tag (1…8), inserted
    /// after SOI (any APP1 `vips` wrote is left after it; readers take the first).
    public static func withOrientation(_ jpeg: [UInt8], _ orientation: UInt16) -> [UInt8] {
        // TIFF, big-endian: header, one IFD with one entry (0x0112 SHORT 1 = orientation), no next IFD.
        var tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08, 0x00, 0x01]
        tiff += [0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01, UInt8(orientation >> 8), UInt8(orientation & 0xFF), 0x00, 0x00]
        tiff += [0x00, 0x00, 0x00, 0x00]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        let segment: [UInt8] = [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        return Array(jpeg.prefix(2)) + segment + jpeg.dropFirst(2)
    }

    /// The stored pixels whose display, after EXIF `orientation` is applied, is `upright`.
    public static func stored(_ upright: Pixels, orientation: Int) -> Pixels {
        let transposed = orientation >= 5
        let (width, height) = transposed ? (upright.height, upright.width) : (upright.width, upright.height)
        return Pixels(width: width, height: height) { x, y in
            // Where the stored pixel (x, y) is displayed.
            let (dx, dy): (Int, Int)
            switch orientation {
            case 2: (dx, dy) = (width - 1 - x, y)
            case 3: (dx, dy) = (width - 1 - x, height - 1 - y)
            case 4: (dx, dy) = (x, height - 1 - y)
            case 5: (dx, dy) = (y, x)
            case 6: (dx, dy) = (height - 1 - y, x)
            case 7: (dx, dy) = (height - 1 - y, width - 1 - x)
            case 8: (dx, dy) = (y, width - 1 - x)
            default: (dx, dy) = (x, y)
            }
            let pixel = upright.at(dx, dy)
            return (UInt8(pixel.r), UInt8(pixel.g), UInt8(pixel.b))
        }
    }

    /// A picture whose orientation shows: red top-left quadrant, blue bottom-right, white elsewhere.
    public static func marked(width: Int, height: Int) -> Pixels {
        Pixels(width: width, height: height) { x, y in
            if x < width / 2, y < height / 2 { return (230, 20, 20) }
            if x >= width / 2, y >= height / 2 { return (20, 20, 230) }
            return (250, 250, 250)
        }
    }
}
