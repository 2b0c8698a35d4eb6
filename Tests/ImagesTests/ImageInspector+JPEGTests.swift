import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ImageInspectorJPEGTests {
    private func inspect(_ bytes: [UInt8]) -> Result<ImageInfo, ImageError> {
        ImageInspector.inspect(bytes, declared: .jpeg)
    }

    @Test func realFiles() {
        #expect(inspect(RealFiles.jpeg5x3) == .success(ImageInfo(format: .jpeg, width: 5, height: 3)))
        #expect(inspect(RealFiles.jpegProgressive5x3) == .success(ImageInfo(format: .jpeg, width: 5, height: 3)))
    }

    @Test func baselineAndProgressive() {
        let baseline = Build.jpeg([Build.app0JFIF, Build.dqt, Build.sof(0xC0, width: 640, height: 480), Build.dht, Build.sos])
        #expect(size(inspect(baseline)) == [640, 480])
        let progressive = Build.jpeg([Build.app0JFIF, Build.app1Exif, Build.dqt, Build.sof(0xC2, width: 3, height: 7), Build.sos])
        #expect(size(inspect(progressive)) == [3, 7])
    }

    @Test func everyFrameHeaderMarker() {
        for marker in UInt8(0xC0)...0xCF where ![0xC4, 0xC8, 0xCC].contains(marker) {
            #expect(size(inspect(Build.jpeg([Build.sof(marker, width: 9, height: 4)]))) == [9, 4], "\(marker)")
        }
    }

    @Test func dhtJpgAndDacAreNotFrameHeaders() {
        // Segments shaped like a frame header but with these markers are skipped.
        let decoys = [UInt8(0xC4), 0xC8, 0xCC].map { Build.sof($0, width: 1, height: 1) }
        #expect(size(inspect(Build.jpeg(decoys + [Build.sof(width: 20, height: 10)]))) == [20, 10])
    }

    @Test func fillBytesStandaloneMarkersAndStrayBytes() {
        let fill: [UInt8] = [0xFF, 0xFF, 0xFF]
        let standalone: [UInt8] = [0xFF, 0xD0, 0xFF, 0xD7, 0xFF, 0x01]
        let bytes = Build.jpeg([
            fill, Build.app0JFIF, fill + fill, Build.app1Exif, standalone, [0x00, 0x12, 0xFF, 0x00],
            fill, Build.sof(0xC2, width: 33, height: 44),
        ])
        #expect(size(inspect(bytes)) == [33, 44])
    }

    @Test func largeSegmentsAreSkippedByLength() {
        let exif = Build.segment(0xE1, [UInt8](repeating: 0xFF, count: 65533))
        let icc = Build.segment(0xE2, [UInt8](repeating: 0xD9, count: 40000))
        #expect(size(inspect(Build.jpeg([exif, icc, exif, Build.sof(width: 4000, height: 3000)]))) == [4000, 3000])
    }

    @Test func segmentRunningPastTheEnd() {
        let bytes: [UInt8] = [0xFF, 0xD8] + [0xFF, 0xE0, 0x40, 0x00] + [UInt8](repeating: 0, count: 100)
        #expect(code(inspect(bytes)) == .truncated)
        // Even when a frame header sits inside the segment's claimed length.
        let hidden: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE1, 0x00, 0x40] + Build.sof(width: 1, height: 1)
        #expect(code(inspect(hidden)) == .truncated)
    }

    @Test func noFrameHeader() {
        #expect(code(inspect(Build.jpeg([Build.app0JFIF, Build.dqt]))) == .malformed)
        #expect(code(inspect([0xFF, 0xD8, 0xFF, 0xD9])) == .malformed)
        #expect(code(inspect(Build.jpeg([Build.dqt, Build.sos, Build.sof(width: 1, height: 1)]))) == .malformed)
        #expect(code(inspect(Build.jpeg([Build.app0JFIF, [0xFF, 0xD8], Build.sof(width: 1, height: 1)]))) == .malformed)
        #expect(code(inspect(Build.jpeg([Build.app0JFIF]) + Build.sof(width: 1, height: 1))) == .malformed)
    }

    @Test func badLengths() {
        #expect(code(inspect([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01, 0, 0, 0, 0])) == .malformed)
        #expect(code(inspect([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x00, 0, 0, 0, 0])) == .malformed)
        #expect(code(inspect([0xFF, 0xD8, 0xFF, 0xC0, 0x00, 0x07, 8, 0, 1, 0, 1, 1, 1, 0x11, 0])) == .malformed)
    }

    @Test func truncatedInsideTheFrameHeader() {
        let bytes = [0xFF, 0xD8] + Build.sof(width: 640, height: 480)
        for length in 0..<11 {
            #expect(code(inspect(Array(bytes.prefix(length)))) == .truncated, "\(length)")
        }
        #expect(size(inspect(Array(bytes.prefix(11)))) == [640, 480])
        #expect(code(inspect([0xFF, 0xD8, 0xFF, 0xFF, 0xFF])) == .truncated)
        #expect(code(inspect([0xFF, 0xD8, 0xFF, 0xE0, 0x00])) == .truncated)
    }

    @Test func dimensions() {
        // A height of 0 defers it to a DNL marker, which is not supported.
        #expect(code(inspect(Build.jpeg([Build.sof(width: 10, height: 0)]))) == .invalidDimensions)
        #expect(code(inspect(Build.jpeg([Build.sof(width: 0, height: 10)]))) == .invalidDimensions)
        #expect(code(inspect(Build.jpeg([Build.sof(width: 65535, height: 65535)]))) == .tooManyPixels)
        #expect(size(inspect(Build.jpeg([Build.sof(width: 10000, height: 10000)]))) == [10000, 10000])
        #expect(code(inspect(Build.jpeg([Build.sof(width: 10000, height: 10001)]))) == .tooManyPixels)
    }
}
