import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ImageInspectorPNGTests {
    private func inspect(_ bytes: [UInt8]) -> Result<ImageInfo, ImageError> {
        ImageInspector.inspect(bytes, declared: .png)
    }

    @Test func realFile() {
        #expect(inspect(RealFiles.png3x2) == .success(ImageInfo(format: .png, width: 3, height: 2)))
    }

    @Test func builtImages() {
        #expect(size(inspect(Build.png(width: 1, height: 1))) == [1, 1])
        #expect(size(inspect(Build.png(width: 640, height: 480))) == [640, 480])
        #expect(size(inspect(Build.png(width: 1, height: 1, bitDepth: 1, colorType: 0))) == [1, 1])
        #expect(size(inspect(Build.png(width: 2, height: 3, bitDepth: 16, colorType: 2))) == [2, 3])
    }

    @Test func onlyTheSignatureAndIHDRAreNeeded() {
        let png = Build.png(width: 640, height: 480)
        #expect(size(inspect(Array(png.prefix(33)))) == [640, 480])
        #expect(code(inspect(Array(png.prefix(32)))) == .truncated)
    }

    @Test func firstChunkMustBeIHDR() {
        let bytes =
            Build.pngSignature + Build.pngChunk("gAMA", Build.be32(45455))
            + Build.pngChunk("IHDR", Build.ihdr(width: 1, height: 1))
        #expect(code(inspect(bytes)) == .malformed)
        let lowercase = Build.pngSignature + Build.pngChunk("ihdr", Build.ihdr(width: 1, height: 1))
        #expect(code(inspect(lowercase)) == .malformed)
    }

    @Test func ihdrChecksumIsVerified() {
        let wrongCRC = Build.pngSignature + Build.pngChunk("IHDR", Build.ihdr(width: 1, height: 1), crc: 0x1234_5678)
        #expect(code(inspect(wrongCRC)) == .malformed)
        // A flipped bit in the width is caught by the CRC rather than read as a size.
        var flipped = Build.png(width: 640, height: 480)
        flipped[17] ^= 0x40
        #expect(code(inspect(flipped)) == .malformed)
    }

    @Test func ihdrLengthMustBe13() {
        let long = Build.pngSignature + Build.pngChunk("IHDR", Build.ihdr(width: 1, height: 1) + [0])
        #expect(code(inspect(long)) == .malformed)
        let short = Build.pngSignature + Build.pngChunk("IHDR", Array(Build.ihdr(width: 1, height: 1).prefix(12)))
        #expect(code(inspect(short)) == .malformed)
    }

    @Test func headerFieldsAreValidated() {
        for (depth, type) in [(8, 1), (8, 5), (8, 7), (2, 2), (16, 3), (4, 6), (3, 0), (0, 0)] as [(UInt8, UInt8)] {
            #expect(code(inspect(Build.png(width: 1, height: 1, bitDepth: depth, colorType: type))) == .malformed, "\(depth) \(type)")
        }
        var badInterlace = Build.ihdr(width: 1, height: 1)
        badInterlace[12] = 2
        #expect(code(inspect(Build.pngSignature + Build.pngChunk("IHDR", badInterlace))) == .malformed)
        var badCompression = Build.ihdr(width: 1, height: 1)
        badCompression[10] = 1
        #expect(code(inspect(Build.pngSignature + Build.pngChunk("IHDR", badCompression))) == .malformed)
        #expect(size(inspect(Build.pngSignature + Build.pngChunk("IHDR", Build.ihdr(width: 5, height: 6, interlace: 1)))) == [5, 6])
    }

    @Test func dimensions() {
        #expect(code(inspect(Build.png(width: 0, height: 1))) == .invalidDimensions)
        #expect(code(inspect(Build.png(width: 1, height: 0))) == .invalidDimensions)
        #expect(code(inspect(Build.png(width: 65535, height: 65535))) == .tooManyPixels)
        #expect(code(inspect(Build.png(width: 65536, height: 1))) == .tooManyPixels)
        #expect(code(inspect(Build.png(width: 0x8000_0000, height: 1))) == .malformed)
        #expect(code(inspect(Build.png(width: 0x7FFF_FFFF, height: 0x7FFF_FFFF))) == .tooManyPixels)
    }
}
