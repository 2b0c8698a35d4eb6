import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ImageInspectorTests {
    /// One valid sample per format and variant, with its size.
    static let samples: [(format: ImageFormat, bytes: [UInt8], size: [Int])] = [
        (.png, RealFiles.png3x2, [3, 2]),
        (.png, Build.png(width: 640, height: 480), [640, 480]),
        (.gif, RealFiles.gif3x2, [3, 2]),
        (.gif, Build.gif("87a", width: 640, height: 480), [640, 480]),
        (.jpeg, RealFiles.jpeg5x3, [5, 3]),
        (.jpeg, RealFiles.jpegProgressive5x3, [5, 3]),
        (.jpeg, Build.jpeg([Build.app0JFIF, [0xFF, 0xFF], Build.app1Exif, Build.sof(0xC2, width: 640, height: 480), Build.sos]), [640, 480]),
        (.webp, RealFiles.webpLossy7x4, [7, 4]),
        (.webp, RealFiles.webpLossless7x4, [7, 4]),
        (.webp, RealFiles.webpAlpha7x4, [7, 4]),
        (.webp, Build.vp8(width: 640, height: 480), [640, 480]),
        (.webp, Build.vp8l(width: 640, height: 480), [640, 480]),
        (.webp, Build.vp8x(width: 640, height: 480), [640, 480]),
        (.heic, RealFiles.heic64x48, [64, 48]),
        (.heic, Build.heic(width: 640, height: 480), [640, 480]),
    ]

    @Test func everySampleIsRead() {
        for sample in Self.samples {
            #expect(
                ImageInspector.inspect(sample.bytes, declared: sample.format)
                    == .success(ImageInfo(format: sample.format, width: sample.size[0], height: sample.size[1])))
            let viaPointer = sample.bytes.withUnsafeBytes { ImageInspector.inspect($0, declared: sample.format) }
            #expect(size(viaPointer) == sample.size)
        }
    }

    @Test func everyPrefixIsTruncatedUntilTheHeaderIsComplete() {
        for sample in Self.samples {
            var complete: Int?
            for length in 0...sample.bytes.count {
                let result = ImageInspector.inspect(Array(sample.bytes.prefix(length)), declared: sample.format)
                if let complete {
                    #expect(size(result) == sample.size, "\(sample.format) \(length) after \(complete)")
                } else if size(result) == sample.size {
                    complete = length
                } else {
                    #expect(code(result) == .truncated, "\(sample.format) cut at \(length) of \(sample.bytes.count)")
                }
            }
            #expect(complete != nil)
        }
    }

    @Test func emptyAndOneByte() {
        for format in ImageFormat.allCases {
            #expect(code(ImageInspector.inspect([], declared: format)) == .truncated)
            #expect(code(ImageInspector.inspect([0x00], declared: format)) == (format == .heic ? .truncated : .contentMismatch))
            #expect(code(ImageInspector.inspect([0x42], declared: format)) == (format == .heic ? .truncated : .contentMismatch))
        }
        #expect(code(ImageInspector.inspect([0x89], declared: .png)) == .truncated)
        #expect(code(ImageInspector.inspect([0xFF], declared: .jpeg)) == .truncated)
        #expect(code(ImageInspector.inspect(Build.ascii("G"), declared: .gif)) == .truncated)
        #expect(code(ImageInspector.inspect(Build.ascii("R"), declared: .webp)) == .truncated)
    }

    @Test func everyWrongDeclarationIsAMismatchNamingTheRealFormat() throws {
        for sample in Self.samples {
            for declared in ImageFormat.allCases where declared != sample.format {
                let result = ImageInspector.inspect(sample.bytes, declared: declared)
                guard case .failure(let error) = result else {
                    Issue.record("\(sample.format) declared \(declared) was accepted")
                    continue
                }
                #expect(error.code == .contentMismatch)
                #expect(error.detected == sample.format)
                #expect(error.detail.contains(declared.mimeType))
                #expect(error.detail.contains(sample.format.mimeType))
            }
        }
    }

    @Test func mismatchMessages() throws {
        let pngAsJPEG = ImageInspector.inspect(RealFiles.png3x2, declared: .jpeg)
        #expect(pngAsJPEG == .failure(ImageError(.contentMismatch, "Declared image/jpeg but the bytes are PNG (image/png).", detected: .png)))
        let text = ImageInspector.inspect(Build.ascii("<svg xmlns='http://www.w3.org/2000/svg'/>"), declared: .png)
        guard case .failure(let error) = text else { Issue.record("accepted"); return }
        #expect(error.code == .contentMismatch)
        #expect(error.detected == nil)
        #expect(error.description == "content_mismatch: The bytes are not PNG (declared image/png).")
        #expect(!error.description.contains("svg"))
    }

    @Test func limits() {
        let limits = ImageLimits(maxPixels: 1000, maxDimension: 100)
        let png = { (width: UInt32, height: UInt32) in ImageInspector.inspect(Build.png(width: width, height: height), declared: .png, limits: limits)
        }
        #expect(size(png(100, 10)) == [100, 10])
        #expect(size(png(10, 100)) == [10, 100])
        #expect(code(png(101, 1)) == .tooManyPixels)
        #expect(code(png(1, 101)) == .tooManyPixels)
        #expect(code(png(40, 26)) == .tooManyPixels)
        #expect(size(png(40, 25)) == [40, 25])
        #expect(ImageLimits() == ImageLimits(maxPixels: 100_000_000, maxDimension: 65_535))
        // Sides up to 2^31 - 1 multiply without overflow even when the caller raises the limits.
        let unlimited = ImageLimits(maxPixels: .max, maxDimension: .max)
        let result = ImageInspector.inspect(Build.png(width: 0x7FFF_FFFF, height: 0x7FFF_FFFF), declared: .png, limits: unlimited)
        #expect(size(result) == [0x7FFF_FFFF, 0x7FFF_FFFF])
        let wide = ImageInspector.inspect(Build.heic(width: .max, height: 1), declared: .heic, limits: unlimited)
        #expect(size(wide) == [Int(UInt32.max), 1])
        // 2^32 - 1 squared overflows Int: too many pixels for any limit, not a crash.
        let huge = ImageInspector.inspect(Build.heic(width: .max, height: .max), declared: .heic, limits: unlimited)
        #expect(code(huge) == .tooManyPixels)
    }

    @Test func errorTexts() {
        let error = ImageError(.truncated, "The PNG header is cut short.", offset: 12)
        #expect(error.description == "truncated: The PNG header is cut short.")
        #expect(error.debugDescription == "truncated: The PNG header is cut short. (at byte 12)")
        #expect(
            [ImageError.Code.contentMismatch, .truncated, .invalidDimensions, .tooManyPixels, .malformed].map(\.rawValue)
                == ["content_mismatch", "truncated", "invalid_dimensions", "too_many_pixels", "malformed"])
        let zero = ImageInspector.inspect(Build.gif(width: 0, height: 7), declared: .gif)
        #expect(zero == .failure(ImageError(.invalidDimensions, "The GIF image is 0×7 pixels.")))
    }

    @Test func headerBytesNeeded() throws {
        // The promise: headers that end within the first `headerBytesNeeded` bytes are judged from
        // that prefix. A JPEG whose frame header follows three full-size APP segments and a fourth
        // that brings the last byte the inspector reads (the width's) to the prefix's very last
        // byte: judged from exactly that many bytes, and `truncated` (retry with more) from one fewer.
        let full = Build.segment(0xE2, [UInt8](repeating: 0, count: 65533))
        let rest = Build.segment(0xE2, [UInt8](repeating: 0, count: 65518))
        let jpeg = Build.jpeg([full, full, full, rest, Build.sof(width: 8, height: 8)])
        // SOI, the APP segments, then the frame header's marker (2), length (2), precision (1),
        // height (2) and width (2).
        let needed = 2 + 3 * full.count + rest.count + 9
        try #require(needed == ImageInspector.headerBytesNeeded, "the layout ends at \(needed), not at \(ImageInspector.headerBytesNeeded)")
        #expect(size(ImageInspector.inspect(Array(jpeg.prefix(needed)), declared: .jpeg)) == [8, 8])
        #expect(code(ImageInspector.inspect(Array(jpeg.prefix(needed - 1)), declared: .jpeg)) == .truncated)
    }

    @Test func randomBytesNeverCrashOrHang() {
        var random = SplitMix64(seed: 0x1D6E_5A11)
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for round in 0..<3000 {
                let length = Int.random(in: 0...600, using: &random)
                var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
                // Give a third of them a real signature so that the parsers, not only the signature check, run.
                if round % 3 == 0, let sample = Self.samples.randomElement(using: &random) {
                    let keep = min(bytes.count, Int.random(in: 0...40, using: &random))
                    bytes.replaceSubrange(0..<keep, with: sample.bytes.prefix(keep))
                }
                for format in ImageFormat.allCases {
                    check(ImageInspector.inspect(bytes, declared: format))
                }
                _ = ImageFormat.sniff(bytes)
            }
        }
        // Only against a hang (a loop that walks a declared length byte by byte, say): far beyond
        // any slow machine. How fast inspection is is not this test's claim.
        #expect(elapsed < .seconds(60), "took \(elapsed)")
    }

    @Test func mutatedSamplesNeverCrashOrHang() {
        var random = SplitMix64(seed: 42)
        let clock = ContinuousClock()
        let elapsed = clock.measure {
            for sample in Self.samples {
                for _ in 0..<400 {
                    var bytes = sample.bytes
                    for _ in 0..<Int.random(in: 1...4, using: &random) where !bytes.isEmpty {
                        let index = Int.random(in: 0..<bytes.count, using: &random)
                        switch Int.random(in: 0..<4, using: &random) {
                        case 0: bytes[index] = .random(in: 0...255, using: &random)
                        case 1: bytes[index] = [0x00, 0x01, 0xFF, 0x7F, 0x80].randomElement(using: &random)!
                        case 2: bytes.insert(.random(in: 0...255, using: &random), at: index)
                        default: bytes.removeSubrange(index..<min(bytes.count, index + Int.random(in: 1...8, using: &random)))
                        }
                    }
                    check(ImageInspector.inspect(bytes, declared: sample.format))
                }
            }
        }
        // Only against a hang (a loop that walks a declared length byte by byte, say): far beyond
        // any slow machine. How fast inspection is is not this test's claim.
        #expect(elapsed < .seconds(60), "took \(elapsed)")
    }

    /// Whatever the bytes, a success is within the limits and a failure has a known code.
    private func check(_ result: Result<ImageInfo, ImageError>) {
        switch result {
        case .success(let info):
            #expect(info.width > 0 && info.height > 0)
            #expect(info.width <= 65_535 && info.height <= 65_535 && info.width * info.height <= 100_000_000)
        case .failure(let error):
            #expect([ImageError.Code.contentMismatch, .truncated, .invalidDimensions, .tooManyPixels, .malformed].contains(error.code))
        }
    }
}
