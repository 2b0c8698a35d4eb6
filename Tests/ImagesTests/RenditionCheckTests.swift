import TestSupport
import Testing
import Thumbnails

@testable import Images

/// What the server believes of a helper's rendition: its bytes are an image of the format and
/// the dimensions it declares (the pool has checked the sizes and signatures before).
@Suite(.testThreads)
struct RenditionCheckTests {
    @Test(arguments: [ThumbnailFormat.webp, .jpeg])
    func aRenditionIsBelievedOnlyWhenItsHeaderAgrees(_ format: ThumbnailFormat) throws {
        let bytes = try TestImages.encode(TestImages.marked(width: 64, height: 32), as: format == .webp ? ".webp" : ".jpg")
        let spec = ThumbnailSpec(size: 128, format: format)
        #expect(ImageService.isWhatItSays(Rendition(spec: spec, width: 64, height: 32, bytes: bytes)))
        #expect(!ImageService.isWhatItSays(Rendition(spec: spec, width: 128, height: 64, bytes: bytes)), "other dimensions")
        #expect(!ImageService.isWhatItSays(Rendition(spec: spec, width: 64, height: 33, bytes: bytes)), "another height")
        let other = ThumbnailSpec(size: 128, format: format == .webp ? .jpeg : .webp)
        #expect(!ImageService.isWhatItSays(Rendition(spec: other, width: 64, height: 32, bytes: bytes)), "another format")
        #expect(!ImageService.isWhatItSays(Rendition(spec: spec, width: 64, height: 32, bytes: Array(bytes.prefix(10)))), "cut short")
    }
}
