import TestSupport
import Testing

@testable import Thumbnails

/// BlurHash against the reference C encoder (blurhash-python 1.2.2 on the same pixels).
@Suite(.testThreads)
struct BlurhashTests {
    static func gradient(width: Int = 32, height: Int = 24) -> [UInt8] {
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width { pixels += [UInt8(x * 8 % 256), UInt8(y * 10 % 256), UInt8((x + y) * 5 % 256)] }
        }
        return pixels
    }

    @Test func matchesTheReferenceEncoder() {
        let hash = Self.gradient().withUnsafeBufferPointer {
            Blurhash.encode(pixels: $0, width: 32, height: 24, channels: 3, componentsX: 4, componentsY: 3)
        }
        #expect(hash == "LxH27+2jwzX7m9WYjvf5gIflfOfl")
        let solid = [UInt8]([200, 30, 90]).repeated(35)
        let solidHash = solid.withUnsafeBufferPointer {
            Blurhash.encode(pixels: $0, width: 5, height: 7, channels: 3, componentsX: 3, componentsY: 4)
        }
        #expect(solidHash == "TbM^#v|zfQ]VsofQfQfQfQ]VsofQ")
    }

    @Test func aFourthChannelIsSkipped() {
        var rgba: [UInt8] = []
        let rgb = Self.gradient()
        for index in stride(from: 0, to: rgb.count, by: 3) { rgba += rgb[index..<index + 3] + [17] }
        let hash = rgba.withUnsafeBufferPointer {
            Blurhash.encode(pixels: $0, width: 32, height: 24, channels: 4, componentsX: 4, componentsY: 3)
        }
        #expect(hash == "LxH27+2jwzX7m9WYjvf5gIflfOfl")
    }

    @Test func wellFormedness() {
        #expect(Blurhash.isWellFormed(Array("LxH27+2jwzX7m9WYjvf5gIflfOfl".utf8)))
        #expect(!Blurhash.isWellFormed(Array("LxH27+2jwzX7m9WYjvf5gIflfOf".utf8)))  // one digit short
        #expect(!Blurhash.isWellFormed(Array("LxH27+2jwzX7m9WYjvf5gIflfOf\"".utf8)))  // not base 83
        #expect(!Blurhash.isWellFormed(Array("".utf8)))
    }

    @Test func dominantColorIsTheFullestBucketsAverage() {
        // 3 pixels near red, 2 blue: red wins, averaged.
        let pixels: [UInt8] = [250, 0, 0, 252, 2, 0, 254, 4, 0, 0, 0, 255, 0, 0, 255]
        #expect(pixels.withUnsafeBufferPointer { DominantColor.of(pixels: $0, count: 5, channels: 3) } == "#fc0200")
    }
}

extension Array {
    func repeated(_ count: Int) -> [Element] { (0..<count).flatMap { _ in self } }
}
