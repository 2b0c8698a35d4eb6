import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ImageInspectorWebPTests {
    private func inspect(_ bytes: [UInt8]) -> Result<ImageInfo, ImageError> {
        ImageInspector.inspect(bytes, declared: .webp)
    }

    @Test func realFiles() {
        #expect(inspect(RealFiles.webpLossy7x4) == .success(ImageInfo(format: .webp, width: 7, height: 4)))
        #expect(inspect(RealFiles.webpLossless7x4) == .success(ImageInfo(format: .webp, width: 7, height: 4)))
        #expect(inspect(RealFiles.webpAlpha7x4) == .success(ImageInfo(format: .webp, width: 7, height: 4)))
    }

    @Test func lossy() {
        #expect(size(inspect(Build.vp8(width: 1, height: 1))) == [1, 1])
        #expect(size(inspect(Build.vp8(width: 640, height: 480))) == [640, 480])
        #expect(size(inspect(Build.vp8(width: 16383, height: 2))) == [16383, 2])
        // The top two bits are the upscaling hint.
        #expect(size(inspect(Build.vp8(width: 0xC000 | 300, height: 0x4000 | 200))) == [300, 200])
    }

    @Test func lossless() {
        #expect(size(inspect(Build.vp8l(width: 1, height: 1))) == [1, 1])
        #expect(size(inspect(Build.vp8l(width: 640, height: 480, alpha: true))) == [640, 480])
        #expect(size(inspect(Build.vp8l(width: 16384, height: 2))) == [16384, 2])
        #expect(size(inspect(Build.vp8l(width: 3, height: 16384))) == [3, 16384])
    }

    @Test func extended() {
        #expect(size(inspect(Build.vp8x(width: 1, height: 1))) == [1, 1])
        #expect(size(inspect(Build.vp8x(width: 640, height: 480))) == [640, 480])
        #expect(code(inspect(Build.vp8x(width: 1 << 24, height: 1 << 24))) == .tooManyPixels)
        #expect(size(inspect(Build.vp8x(width: 65535, height: 1))) == [65535, 1])
        #expect(code(inspect(Build.vp8x(width: 65536, height: 1))) == .tooManyPixels)
    }

    @Test func headerLengths() {
        #expect(size(inspect(Array(Build.vp8(width: 5, height: 6).prefix(30)))) == [5, 6])
        #expect(code(inspect(Array(Build.vp8(width: 5, height: 6).prefix(29)))) == .truncated)
        #expect(size(inspect(Array(Build.vp8l(width: 5, height: 6).prefix(25)))) == [5, 6])
        #expect(code(inspect(Array(Build.vp8l(width: 5, height: 6).prefix(24)))) == .truncated)
        #expect(size(inspect(Array(Build.vp8x(width: 5, height: 6).prefix(30)))) == [5, 6])
        #expect(code(inspect(Array(Build.vp8x(width: 5, height: 6).prefix(29)))) == .truncated)
    }

    @Test func badRIFFSize() {
        let chunk = Build.webpChunk("VP8L", [0x2F, 0, 0, 0, 0, 0, 0])
        for riffSize: UInt32 in [0, 4, 11, 12, 4 + 8 + 7 - 1] {
            #expect(code(inspect(Build.riff(chunk, size: riffSize))) == .malformed, "\(riffSize)")
        }
        #expect(size(inspect(Build.riff(chunk, size: 4 + 8 + 7))) == [1, 1])
        // A RIFF size larger than the bytes is a prefix, not an error; trailing bytes are ignored.
        #expect(size(inspect(Build.riff(chunk, size: 0xFFFF_FFFE))) == [1, 1])
        #expect(size(inspect(Build.riff(chunk, size: 4 + 8 + 7) + [1, 2, 3, 4])) == [1, 1])
    }

    @Test func badChunks() {
        #expect(code(inspect(Build.riff(Build.webpChunk("ALPH", [0, 0, 0, 0])))) == .malformed)
        #expect(code(inspect(Build.riff(Build.webpChunk("VP8L", [0x2E, 0, 0, 0, 0])))) == .malformed)
        #expect(code(inspect(Build.vp8l(width: 1, height: 1, version: 1))) == .malformed)
        #expect(code(inspect(Build.riff(Build.webpChunk("VP8L", [0x2F, 0, 0, 0])))) == .malformed)
        #expect(code(inspect(Build.riff(Build.webpChunk("VP8 ", Array(Build.vp8Payload(width: 1, height: 1).prefix(9)))))) == .malformed)
        #expect(code(inspect(Build.riff(Build.webpChunk("VP8 ", Build.vp8Payload(width: 1, height: 1, keyFrame: false))))) == .malformed)
        var noStartCode = Build.vp8Payload(width: 1, height: 1)
        noStartCode[4] = 0x02
        #expect(code(inspect(Build.riff(Build.webpChunk("VP8 ", noStartCode)))) == .malformed)
        #expect(code(inspect(Build.riff(Build.webpChunk("VP8X", [UInt8](repeating: 0, count: 9))))) == .malformed)
        // A chunk size beyond the RIFF size.
        #expect(code(inspect(Build.riff(Build.webpChunk("VP8X", [UInt8](repeating: 0, count: 10), size: 0xFFFF_FFF0)))) == .malformed)
    }

    @Test func dimensions() {
        #expect(code(inspect(Build.vp8(width: 0, height: 5))) == .invalidDimensions)
        #expect(code(inspect(Build.vp8(width: 0x4000, height: 5))) == .invalidDimensions)
        #expect(code(inspect(Build.vp8(width: 5, height: 0))) == .invalidDimensions)
        #expect(code(inspect(Build.vp8x(width: 65535, height: 65535))) == .tooManyPixels)
    }
}
