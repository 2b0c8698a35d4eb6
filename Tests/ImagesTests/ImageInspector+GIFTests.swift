import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ImageInspectorGIFTests {
    private func inspect(_ bytes: [UInt8]) -> Result<ImageInfo, ImageError> {
        ImageInspector.inspect(bytes, declared: .gif)
    }

    @Test func realFile() {
        #expect(inspect(RealFiles.gif3x2) == .success(ImageInfo(format: .gif, width: 3, height: 2)))
    }

    @Test func bothVersions() {
        #expect(size(inspect(Build.gif("87a", width: 1, height: 1))) == [1, 1])
        #expect(size(inspect(Build.gif("89a", width: 640, height: 480))) == [640, 480])
        #expect(size(inspect(Build.gif("89a", width: 0x1234, height: 0x0102))) == [0x1234, 0x0102])
    }

    @Test func otherVersionsAreNotGIF() {
        #expect(code(inspect(Build.gif("88a", width: 1, height: 1))) == .contentMismatch)
        #expect(code(inspect(Build.gif("89b", width: 1, height: 1))) == .contentMismatch)
    }

    @Test func theWholeScreenDescriptorIsNeeded() {
        let gif = Build.gif(width: 640, height: 480)
        #expect(size(inspect(Array(gif.prefix(13)))) == [640, 480])
        #expect(code(inspect(Array(gif.prefix(12)))) == .truncated)
        #expect(code(inspect(Array(gif.prefix(10)))) == .truncated)
    }

    @Test func dimensions() {
        #expect(code(inspect(Build.gif(width: 0, height: 0))) == .invalidDimensions)
        #expect(code(inspect(Build.gif(width: 5, height: 0))) == .invalidDimensions)
        #expect(code(inspect(Build.gif(width: 65535, height: 65535))) == .tooManyPixels)
        #expect(size(inspect(Build.gif(width: 65535, height: 1))) == [65535, 1])
    }
}
