import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ImageInspectorHEICTests {
    private func inspect(_ bytes: [UInt8]) -> Result<ImageInfo, ImageError> {
        ImageInspector.inspect(bytes, declared: .heic)
    }

    private typealias B = Build

    private func heic(_ metaChildren: [[UInt8]], ftyp: [UInt8] = Build.ftyp()) -> [UInt8] {
        ftyp + B.meta(metaChildren) + B.box("mdat", [1, 2, 3, 4])
    }

    private func iprp(_ properties: [[UInt8]], _ associations: [(item: UInt16, properties: [UInt8])] = []) -> [UInt8] {
        B.box("iprp", B.box("ipco", properties.flatMap { $0 }) + (associations.isEmpty ? [] : B.ipma(associations)))
    }

    @Test func realFileUsesThePrimaryItemsSize() {
        // The first ispe is the 64×64 tile's; the primary grid item is 64×48.
        #expect(inspect(RealFiles.heic64x48) == .success(ImageInfo(format: .heic, width: 64, height: 48)))
    }

    @Test func builtImages() {
        #expect(size(inspect(B.heic(width: 1, height: 1))) == [1, 1])
        #expect(size(inspect(B.heic(width: 640, height: 480))) == [640, 480])
        #expect(size(inspect(B.heic(width: 4032, height: 3024))) == [4032, 3024])
    }

    @Test func sixtyFourBitSizes() {
        let ipco = B.box64("ipco", B.hvcC + B.ispe(width: 320, height: 240))
        let meta = B.box64("meta", [0, 0, 0, 0] + B.hdlr + B.box64("iprp", ipco))
        #expect(size(inspect(B.ftyp() + B.box64("free", [1, 2, 3]) + meta + B.box64("mdat", [9]))) == [320, 240])
    }

    @Test func brands() {
        let rest = B.meta([iprp([B.ispe(width: 2, height: 3)])])
        for brand in ["heic", "heix", "hevc", "hevx", "heim", "heis"] {
            #expect(size(inspect(B.ftyp(brand, []) + rest)) == [2, 3], "\(brand)")
            #expect(size(inspect(B.ftyp("mif1", ["miaf", brand]) + rest)) == [2, 3], "\(brand)")
        }
        // mif1 alone is any HEIF, AVIF included: not accepted as HEIC.
        let mif1 = inspect(B.ftyp("mif1", ["mif1", "miaf"]) + rest)
        #expect(code(mif1) == .contentMismatch)
        let avif = inspect(RealFiles.avif64x48)
        #expect(code(avif) == .contentMismatch)
        if case .failure(let error) = avif { #expect(error.detected == nil) }
    }

    @Test func brokenFileTypeBox() {
        #expect(code(inspect(B.be32(12) + B.ascii("ftypheic") + [0, 0, 0, 0])) == .malformed)
        #expect(code(inspect(B.be32(0) + B.ascii("ftypheic") + [0, 0, 0, 0])) == .malformed)
        #expect(code(inspect(B.be32(5000) + B.ascii("ftypheic") + [UInt8](repeating: 0, count: 4992))) == .malformed)
        #expect(code(inspect(B.be32(4) + B.ascii("ftypheic"))) == .malformed)
        #expect(code(inspect(Array(B.ftyp().prefix(20)))) == .truncated)
    }

    @Test func primaryItemWins() {
        // Item 1 is a 512×512 tile, item 2 the 1024×768 grid named by pitm.
        let properties = [B.hvcC, B.ispe(width: 512, height: 512), B.ispe(width: 1024, height: 768)]
        let bytes = heic([B.hdlr, B.pitm(2), iprp(properties, [(1, [1, 2]), (2, [3])])])
        #expect(size(inspect(bytes)) == [1024, 768])
        // 16-bit indices (flags & 1) and a version-1 ipma with 32-bit item ids.
        let wide = B.fullBox(
            "ipma", version: 1, flags: 1,
            B.be32(2) + B.be32(1) + [2] + B.be16(0x8001) + B.be16(2)
                + B.be32(2) + [1] + B.be16(0x8003))
        let wideBytes = heic([B.hdlr, B.pitm(2), B.box("iprp", B.box("ipco", properties.flatMap { $0 }) + wide)])
        #expect(size(inspect(wideBytes)) == [1024, 768])
    }

    @Test func firstIspeWithoutPrimaryItem() {
        let properties = [B.hvcC, B.ispe(width: 512, height: 512), B.ispe(width: 1024, height: 768)]
        // No pitm.
        #expect(size(inspect(heic([B.hdlr, iprp(properties, [(1, [1, 2]), (2, [3])])]))) == [512, 512])
        // No ipma.
        #expect(size(inspect(heic([B.hdlr, B.pitm(2), iprp(properties)]))) == [512, 512])
        // The primary item has no ispe.
        #expect(size(inspect(heic([B.hdlr, B.pitm(2), iprp(properties, [(1, [2]), (2, [1])])]))) == [512, 512])
        // pitm after iprp is not looked at.
        #expect(size(inspect(heic([B.hdlr, iprp(properties, [(2, [3])]), B.pitm(2)]))) == [512, 512])
    }

    @Test func missingBoxes() {
        #expect(code(inspect(B.ftyp() + B.box("mdat", [1, 2, 3]))) == .truncated)
        #expect(
            code(inspect(B.ftyp() + B.box("free", []) + B.be32(0) + B.ascii("mdat") + B.meta([iprp([B.ispe(width: 1, height: 1)])]))) == .malformed)
        #expect(code(inspect(heic([B.hdlr]))) == .malformed)
        #expect(code(inspect(heic([B.box("iprp", B.ipma([(1, [1])]))]))) == .malformed)
        #expect(code(inspect(heic([iprp([B.hvcC])]))) == .malformed)
        #expect(code(inspect(heic([iprp([])]))) == .malformed)
    }

    @Test func brokenBoxes() {
        // ispe too short for its width and height.
        #expect(code(inspect(heic([iprp([B.fullBox("ispe", B.be32(1))])]))) == .malformed)
        // meta without its FullBox header.
        #expect(code(inspect(B.ftyp() + B.box("meta", [0, 0]))) == .malformed)
        // A child box larger than its parent.
        let oversized = B.be32(100) + B.ascii("ipco")
        #expect(code(inspect(heic([B.box("iprp", oversized)]))) == .malformed)
        // Sizes 2..7 and a 64-bit size smaller than its header.
        #expect(code(inspect(heic([B.hdlr, B.be32(7) + B.ascii("iprp")]))) == .malformed)
        #expect(code(inspect(B.ftyp() + B.be32(3) + B.ascii("free") + B.meta([]))) == .malformed)
        #expect(code(inspect(B.ftyp() + B.be32(1) + B.ascii("free") + B.be64(8))) == .malformed)
        // A size 0 box in the middle of meta takes the rest of meta: no iprp after it.
        #expect(code(inspect(heic([B.hdlr, B.be32(0) + B.ascii("free"), iprp([B.ispe(width: 1, height: 1)])]))) == .malformed)
        // ipma claiming more entries or associations than it holds.
        let properties = [B.ispe(width: 1, height: 1)]
        let lying = B.fullBox("ipma", B.be32(0xFFFF_FFFF) + B.be16(1) + [1, 1])
        #expect(code(inspect(heic([B.pitm(2), B.box("iprp", B.box("ipco", properties.flatMap { $0 }) + lying)]))) == .malformed)
        let lyingCount = B.fullBox("ipma", B.be32(1) + B.be16(2) + [200, 1])
        #expect(code(inspect(heic([B.pitm(2), B.box("iprp", B.box("ipco", properties.flatMap { $0 }) + lyingCount)]))) == .malformed)
    }

    @Test func hugeSizes() {
        // A 64-bit mdat of an exabyte before meta: meta lies beyond the bytes.
        let huge = B.be32(1) + B.ascii("mdat") + B.be64(1 << 60)
        #expect(code(inspect(B.ftyp() + huge + B.meta([iprp([B.ispe(width: 1, height: 1)])]))) == .truncated)
        // A 64-bit size that overflows the file offset.
        let overflowing = B.be32(1) + B.ascii("mdat") + B.be64(.max - 8)
        #expect(code(inspect(B.ftyp() + overflowing)) == .malformed)
        // A huge meta is read as far as the bytes go.
        let hugeMeta = B.be32(1) + B.ascii("meta") + B.be64(1 << 40) + [0, 0, 0, 0] + iprp([B.ispe(width: 6, height: 7)])
        #expect(size(inspect(B.ftyp() + hugeMeta)) == [6, 7])
        let hugeMetaNoIprp = B.be32(1) + B.ascii("meta") + B.be64(1 << 40) + [0, 0, 0, 0] + B.hdlr
        #expect(code(inspect(B.ftyp() + hugeMetaNoIprp)) == .truncated)
    }

    @Test func nestingIsNotFollowed() {
        // meta inside meta inside meta…: only the fixed path is descended, so this is quick and malformed.
        var nested = B.meta([iprp([B.ispe(width: 1, height: 1)])])
        for _ in 0..<1000 { nested = B.meta([nested]) }
        #expect(code(inspect(B.ftyp() + nested)) == .malformed)
        // Boxes that claim to contain themselves cannot: a child must end within its parent.
        let selfish = B.be32(16) + B.ascii("iprp") + B.be32(16) + B.ascii("iprp")
        #expect(code(inspect(heic([selfish]))) == .malformed)
    }

    /// The work is bounded by count, not timed: the inspector stops at the box after the
    /// 4096th (the ftyp counts), and says where, so the boxes after it are never read.
    @Test func boxCountIsBounded() {
        let frees = (0..<5000).flatMap { _ in B.box("free", []) }
        let result = inspect(B.ftyp() + frees + B.meta([iprp([B.ispe(width: 1, height: 1)])]))
        #expect(code(result) == .malformed)
        let stoppedAt: Int? = if case .failure(let error) = result { error.offset } else { nil }
        #expect(ISOBoxIterator.maxBoxes == 4096)
        #expect(stoppedAt == B.ftyp().count + (ISOBoxIterator.maxBoxes - 1) * 8, "stopped at \(String(describing: stoppedAt))")
        let fewer = (0..<4000).flatMap { _ in B.box("free", []) }
        #expect(size(inspect(B.ftyp() + fewer + B.meta([iprp([B.ispe(width: 1, height: 1)])]))) == [1, 1])
    }

    @Test func dimensions() {
        #expect(code(inspect(B.heic(width: 0, height: 1))) == .invalidDimensions)
        #expect(code(inspect(B.heic(width: 1, height: 0))) == .invalidDimensions)
        #expect(code(inspect(B.heic(width: 65535, height: 65535))) == .tooManyPixels)
        #expect(code(inspect(B.heic(width: .max, height: .max))) == .tooManyPixels)
    }
}
