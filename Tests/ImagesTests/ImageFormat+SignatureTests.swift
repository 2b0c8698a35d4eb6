import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ImageFormatSignatureTests {
    @Test func sniffsEveryFormat() {
        #expect(ImageFormat.sniff(RealFiles.png3x2) == .png)
        #expect(ImageFormat.sniff(RealFiles.gif3x2) == .gif)
        #expect(ImageFormat.sniff(Build.gif("87a", width: 1, height: 1)) == .gif)
        #expect(ImageFormat.sniff(RealFiles.jpeg5x3) == .jpeg)
        #expect(ImageFormat.sniff(RealFiles.webpLossy7x4) == .webp)
        #expect(ImageFormat.sniff(RealFiles.webpLossless7x4) == .webp)
        #expect(ImageFormat.sniff(RealFiles.heic64x48) == .heic)
        #expect(ImageFormat.sniff(Build.heic(width: 1, height: 1)) == .heic)
    }

    @Test func sniffNeedsTheWholeSignature() {
        #expect(ImageFormat.sniff([]) == nil)
        #expect(ImageFormat.sniff(Array(RealFiles.png3x2.prefix(7))) == nil)
        #expect(ImageFormat.sniff(Array(RealFiles.png3x2.prefix(8))) == .png)
        #expect(ImageFormat.sniff(Build.ascii("GIF89")) == nil)
        #expect(ImageFormat.sniff(Build.ascii("GIF88a")) == nil)
        #expect(ImageFormat.sniff([0xFF, 0xD8]) == nil)
        #expect(ImageFormat.sniff([0xFF, 0xD8, 0xFF]) == .jpeg)
        #expect(ImageFormat.sniff(Build.ascii("RIFF") + [0, 0, 0, 0] + Build.ascii("WAVE")) == nil)
        // The ftyp box must be complete to see its brands.
        #expect(ImageFormat.sniff(Array(RealFiles.heic64x48.prefix(27))) == nil)
        #expect(ImageFormat.sniff(Array(RealFiles.heic64x48.prefix(28))) == .heic)
    }

    @Test func heicNeedsAHEICBrand() {
        #expect(ImageFormat.sniff(RealFiles.avif64x48) == nil)
        #expect(ImageFormat.sniff(Build.ftyp("mif1", ["mif1", "miaf"])) == nil)
        #expect(ImageFormat.sniff(Build.ftyp("isom", ["mp41"])) == nil)
        for brand in ["heic", "heix", "hevc", "hevx", "heim", "heis"] {
            #expect(ImageFormat.sniff(Build.ftyp(brand, [])) == .heic, "\(brand)")
            #expect(ImageFormat.sniff(Build.ftyp("mif1", ["miaf", brand])) == .heic, "\(brand)")
        }
        // Broken ftyp boxes are not HEIC.
        #expect(ImageFormat.sniff(Build.be32(12) + Build.ascii("ftypheic") + [0, 0, 0, 0]) == nil)
        #expect(ImageFormat.sniff(Build.be32(0) + Build.ascii("ftypheic") + [0, 0, 0, 0]) == nil)
    }
}
