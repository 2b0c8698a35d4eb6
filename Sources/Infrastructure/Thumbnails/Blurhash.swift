#if canImport(Glibc)
import Glibc
#endif

/// The BlurHash encoding (https://github.com/woltapp/blurhash, the reference TypeScript encoder's
/// arithmetic): a few cosine components of the image in linear light, quantised into base 83.
public enum Blurhash {
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~".utf8)

    /// Encodes `width × height` pixels of 8-bit sRGB, `channels` bytes each (the first three are
    /// red, green and blue), with `componentsX × componentsY` components (1…9 each).
    public static func encode(
        pixels: UnsafeBufferPointer<UInt8>, width: Int, height: Int, channels: Int, componentsX: Int, componentsY: Int
    ) -> String {
        precondition((1...9).contains(componentsX) && (1...9).contains(componentsY) && width > 0 && height > 0)
        precondition(pixels.count >= width * height * channels && channels >= 3)
        var linear = [Double](repeating: 0, count: 256)
        for value in 0..<256 { linear[value] = sRGBToLinear(value) }
        // cos(π i x / width) for every i and x, and the same for rows: the sums need no other cosine.
        var cosX = [Double](repeating: 0, count: componentsX * width)
        for i in 0..<componentsX { for x in 0..<width { cosX[i * width + x] = cos(Double.pi * Double(i * x) / Double(width)) } }
        var cosY = [Double](repeating: 0, count: componentsY * height)
        for j in 0..<componentsY { for y in 0..<height { cosY[j * height + y] = cos(Double.pi * Double(j * y) / Double(height)) } }

        var factors = [(Double, Double, Double)](repeating: (0, 0, 0), count: componentsX * componentsY)
        for j in 0..<componentsY {
            for i in 0..<componentsX {
                var (r, g, b) = (0.0, 0.0, 0.0)
                for y in 0..<height {
                    let rowCos = cosY[j * height + y]
                    var offset = y * width * channels
                    for x in 0..<width {
                        let basis = cosX[i * width + x] * rowCos
                        r += basis * linear[Int(pixels[offset])]
                        g += basis * linear[Int(pixels[offset + 1])]
                        b += basis * linear[Int(pixels[offset + 2])]
                        offset += channels
                    }
                }
                let scale = (i == 0 && j == 0 ? 1.0 : 2.0) / Double(width * height)
                factors[j * componentsX + i] = (r * scale, g * scale, b * scale)
            }
        }

        var hash: [UInt8] = []
        append(base83: (componentsX - 1) + (componentsY - 1) * 9, digits: 1, to: &hash)
        let ac = factors.dropFirst()
        var maximum = 1.0
        if ac.isEmpty {
            append(base83: 0, digits: 1, to: &hash)
        } else {
            let actual = ac.map { max(abs($0.0), abs($0.1), abs($0.2)) }.max() ?? 0
            let quantised = Int(max(0, min(82, (actual * 166 - 0.5).rounded(.down))))
            maximum = Double(quantised + 1) / 166
            append(base83: quantised, digits: 1, to: &hash)
        }
        let dc = factors[0]
        append(base83: (linearToSRGB(dc.0) << 16) + (linearToSRGB(dc.1) << 8) + linearToSRGB(dc.2), digits: 4, to: &hash)
        for factor in ac {
            func quantise(_ value: Double) -> Int {
                Int(max(0, min(18, (signedPow(value / maximum, 0.5) * 9 + 9.5).rounded(.down))))
            }
            append(base83: quantise(factor.0) * 19 * 19 + quantise(factor.1) * 19 + quantise(factor.2), digits: 2, to: &hash)
        }
        return String(decoding: hash, as: UTF8.self)
    }

    /// Whether `hash` is a BlurHash: base-83 digits, as many as its first digit says.
    public static func isWellFormed<C: Collection>(_ hash: C) -> Bool where C.Element == UInt8 {
        guard hash.count >= 6, hash.allSatisfy({ alphabet.contains($0) }), let first = hash.first,
            let flag = alphabet.firstIndex(of: first)
        else { return false }
        let (x, y) = (flag % 9 + 1, flag / 9 + 1)
        return hash.count == 4 + 2 * x * y
    }

    static func append(base83 value: Int, digits: Int, to hash: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<max(digits, 1) { divisor *= 83 }
        for _ in 0..<digits {
            hash.append(alphabet[(value / divisor) % 83])
            divisor /= 83
        }
    }

    static func sRGBToLinear(_ value: Int) -> Double {
        let v = Double(value) / 255
        return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
    }

    static func linearToSRGB(_ value: Double) -> Int {
        let v = max(0, min(1, value))
        return v <= 0.003_130_8 ? Int(v * 12.92 * 255 + 0.5) : Int((1.055 * pow(v, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    static func signedPow(_ value: Double, _ exponent: Double) -> Double {
        value < 0 ? -pow(-value, exponent) : pow(value, exponent)
    }
}

/// The colour most pixels are near: pixels are counted in buckets of 16 levels per channel, and
/// the fullest bucket's average is the answer (`#rrggbb`, lowercase).
public enum DominantColor {
    public static func of(pixels: UnsafeBufferPointer<UInt8>, count: Int, channels: Int) -> String {
        precondition(count > 0 && channels >= 3 && pixels.count >= count * channels)
        var population = [Int](repeating: 0, count: 4096)
        var sums = [Int](repeating: 0, count: 4096 * 3)
        var offset = 0
        for _ in 0..<count {
            let (r, g, b) = (Int(pixels[offset]), Int(pixels[offset + 1]), Int(pixels[offset + 2]))
            let bucket = (r >> 4) << 8 | (g >> 4) << 4 | b >> 4
            population[bucket] += 1
            sums[bucket * 3] += r
            sums[bucket * 3 + 1] += g
            sums[bucket * 3 + 2] += b
            offset += channels
        }
        var best = 0
        for bucket in 1..<4096 where population[bucket] > population[best] { best = bucket }
        let n = population[best]
        return "#" + (0..<3).map { ThumbnailWire.hexByte(UInt8((sums[best * 3 + $0] + n / 2) / n)) }.joined()
    }
}
