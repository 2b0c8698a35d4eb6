import TestSupport
import Testing

@testable import Thumbnails

/// The frames between the server and its helpers: what one side writes the other reads, and a
/// helper's answer is checked field by field (it is not trusted).
@Suite(.testThreads)
struct WireTests {
    let job = ThumbnailJob(
        renditions: [ThumbnailSpec(size: 256, format: .webp), ThumbnailSpec(size: 1024, format: .jpeg)], placeholders: true,
        maxPixels: 100_000_000, cpuSeconds: 5)

    @Test func requestsRoundTrip() throws {
        let original: [UInt8] = Array(0..<200)
        let frame = original.withUnsafeBytes { ThumbnailWire.encode(job, original: $0) }
        #expect(try ThumbnailWire.requestLength(header: Array(frame.prefix(4))) == nil)
        #expect(try ThumbnailWire.requestLength(header: Array(frame.prefix(30))) == frame.count)
        let (decoded, range) = try ThumbnailWire.decodeRequest(frame)
        #expect(decoded == job)
        #expect(Array(frame[range]) == original)
    }

    @Test func answersRoundTripAndArriveInPieces() throws {
        let outcome = ThumbnailOutcome.made(
            [Rendition(spec: ThumbnailSpec(size: 256, format: .webp), width: 256, height: 171, bytes: [1, 2, 3])],
            Placeholders(blurhash: "LxH27+2jwzX7m9WYjvf5gIflfOfl", dominantColor: "#0a0bff"))
        let frame = ThumbnailWire.encode(outcome)
        for cut in 0..<frame.count { #expect(try ThumbnailWire.decodeAnswer(Array(frame.prefix(cut))) == nil) }
        #expect(try ThumbnailWire.decodeAnswer(frame) == outcome)
        let refused = ThumbnailOutcome.undecodable("VipsJpeg: premature end of input file")
        #expect(try ThumbnailWire.decodeAnswer(ThumbnailWire.encode(refused)) == refused)
    }

    @Test func nonsenseFromAHelperIsRefused() {
        let good = ThumbnailWire.encode(
            .made([Rendition(spec: ThumbnailSpec(size: 128, format: .jpeg), width: 128, height: 96, bytes: [9])], nil))
        var badMagic = good
        badMagic[0] = UInt8(ascii: "X")
        #expect(throws: ThumbnailWire.Malformed.self) { try ThumbnailWire.decodeAnswer(badMagic) }
        var badStatus = good
        badStatus[4] = 7
        #expect(throws: ThumbnailWire.Malformed.self) { try ThumbnailWire.decodeAnswer(badStatus) }
        var tooWide = good
        tooWide[9] = 200  // width 200 for a 128 thumbnail
        #expect(throws: ThumbnailWire.Malformed.self) { try ThumbnailWire.decodeAnswer(tooWide) }
        var huge = good
        huge.replaceSubrange(17..<21, with: [0xFF, 0xFF, 0xFF, 0x7F])  // a 2 GiB thumbnail
        #expect(throws: ThumbnailWire.Malformed.self) { try ThumbnailWire.decodeAnswer(huge) }
        let notAHash = ThumbnailWire.encode(.made([], Placeholders(blurhash: "nope", dominantColor: "#000000")))
        #expect(throws: ThumbnailWire.Malformed.self) { try ThumbnailWire.decodeAnswer(notAHash) }
    }
}
