import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ImageFormatTests {
    @Test func mimeTypes() {
        #expect(ImageFormat.allCases.map(\.mimeType) == ["image/jpeg", "image/png", "image/gif", "image/webp", "image/heic"])
        for format in ImageFormat.allCases {
            #expect(ImageFormat(mimeType: format.mimeType) == format)
            #expect(format.description == format.mimeType)
        }
    }

    @Test func mimeTypeIsCaseInsensitiveAndIgnoresParameters() {
        #expect(ImageFormat(mimeType: "IMAGE/PNG") == .png)
        #expect(ImageFormat(mimeType: "Image/Jpeg") == .jpeg)
        #expect(ImageFormat(mimeType: "image/webp; charset=binary") == .webp)
        #expect(ImageFormat(mimeType: "image/heic;q=1") == .heic)
        #expect(ImageFormat(mimeType: " image/gif ; x=y") == .gif)
        #expect(ImageFormat(mimeType: "\timage/gif\t") == .gif)
    }

    @Test func otherTypesAreRefused() {
        for value in [
            "", ";", "image", "image/", "image/jpg", "image/pjpeg", "image/heif", "image/avif", "image/svg+xml",
            "text/plain", "image/png2", "image/pn", "image/ png", "application/octet-stream",
            "image/p\u{0130}ng", "image/jpe\u{212A}g",
        ] {
            #expect(ImageFormat(mimeType: value) == nil, "\(value)")
        }
    }
}
