import HTTP
import TestSupport
import Testing

@Suite(.testThreads) struct ByteRangeTests {
    func partial(_ offset: Int, _ length: Int) -> ByteRange.Evaluation { .partial(ByteRange(offset: offset, length: length)) }

    @Test func noHeaderOrAnotherUnitIsFull() {
        #expect(ByteRange.evaluate(nil, size: 100) == .full)
        #expect(ByteRange.evaluate("items=0-5", size: 100) == .full)
        #expect(ByteRange.evaluate("bytesx=0-5", size: 100) == .full)
        #expect(ByteRange.evaluate("=0-5", size: 100) == .full)
        #expect(ByteRange.evaluate("", size: 100) == .full)
        #expect(ByteRange.evaluate("none", size: 0) == .full)
    }

    @Test func intRanges() {
        #expect(ByteRange.evaluate("bytes=0-0", size: 100) == partial(0, 1))
        #expect(ByteRange.evaluate("bytes=0-99", size: 100) == partial(0, 100))
        #expect(ByteRange.evaluate("bytes=10-19", size: 100) == partial(10, 10))
        #expect(ByteRange.evaluate("bytes=99-99", size: 100) == partial(99, 1))
        #expect(ByteRange.evaluate("bytes=007-008", size: 100) == partial(7, 2))
    }

    @Test func openAndClampedRanges() {
        #expect(ByteRange.evaluate("bytes=10-", size: 100) == partial(10, 90))
        #expect(ByteRange.evaluate("bytes=0-", size: 1) == partial(0, 1))
        #expect(ByteRange.evaluate("bytes=50-1000", size: 100) == partial(50, 50))
        #expect(ByteRange.evaluate("bytes=0-100", size: 100) == partial(0, 100))
    }

    @Test func suffixRanges() {
        #expect(ByteRange.evaluate("bytes=-1", size: 100) == partial(99, 1))
        #expect(ByteRange.evaluate("bytes=-10", size: 100) == partial(90, 10))
        #expect(ByteRange.evaluate("bytes=-100", size: 100) == partial(0, 100))
        #expect(ByteRange.evaluate("bytes=-500", size: 100) == partial(0, 100))
        #expect(ByteRange.evaluate("bytes=-0", size: 100) == .unsatisfiable)
        #expect(ByteRange.evaluate("bytes=-000", size: 100) == .unsatisfiable)
    }

    @Test func unitIsCaseInsensitiveAndWhitespaceIsOptional() {
        #expect(ByteRange.evaluate("BYTES=0-4", size: 100) == partial(0, 5))
        #expect(ByteRange.evaluate("Bytes=0-4", size: 100) == partial(0, 5))
        #expect(ByteRange.evaluate("  bytes = 0-4 \t", size: 100) == partial(0, 5))
        #expect(ByteRange.evaluate("bytes=\t-3", size: 100) == partial(97, 3))
        // Empty list elements are allowed around the one range.
        #expect(ByteRange.evaluate("bytes=0-4,", size: 100) == partial(0, 5))
        #expect(ByteRange.evaluate("bytes= , 0-4 ,,", size: 100) == partial(0, 5))
    }

    @Test func unsatisfiableRanges() {
        #expect(ByteRange.evaluate("bytes=100-", size: 100) == .unsatisfiable)
        #expect(ByteRange.evaluate("bytes=100-200", size: 100) == .unsatisfiable)
        #expect(ByteRange.evaluate("bytes=5-3", size: 100) == .unsatisfiable)
        #expect(ByteRange.evaluate("bytes=150-100", size: 100) == .unsatisfiable)
    }

    @Test func anyRangeOfAnEmptyRepresentationIsUnsatisfiable() {
        for header in ["bytes=0-", "bytes=0-0", "bytes=-1", "bytes=-0", "bytes=0-100"] {
            #expect(ByteRange.evaluate(header, size: 0) == .unsatisfiable, "\(header)")
        }
        #expect(ByteRange.evaluate(nil, size: 0) == .full)
    }

    @Test func invalidSyntaxIsUnsatisfiable() {
        let invalid = [
            "bytes=", "bytes= ", "bytes=,", "bytes", "bytes 0-5", "bytes=abc", "bytes=--1", "bytes=-", "bytes=1",
            "bytes=1--2", "bytes=-1-2", "bytes=0-5x", "bytes=x0-5", "bytes=0 - 5", "bytes=0-\u{0}", "bytes=+1-2",
            "bytes=1-+2", "bytes=0x10-", "bytes=1.5-2", "bytes=٣-٤",
        ]
        for header in invalid {
            #expect(ByteRange.evaluate(header, size: 100) == .unsatisfiable, "\(header.debugDescription)")
        }
    }

    @Test func numbersTooLargeForIntSaturate() {
        let huge = String(repeating: "9", count: 40)
        // A first position that large is past the end.
        #expect(ByteRange.evaluate("bytes=\(huge)-", size: 100) == .unsatisfiable)
        #expect(ByteRange.evaluate("bytes=9223372036854775808-", size: 100) == .unsatisfiable)
        // A last position or suffix length that large reaches the end, like any value past it.
        #expect(ByteRange.evaluate("bytes=10-\(huge)", size: 100) == partial(10, 90))
        #expect(ByteRange.evaluate("bytes=-\(huge)", size: 100) == partial(0, 100))
        #expect(ByteRange.evaluate("bytes=\(huge)-\(huge)", size: 100) == .unsatisfiable)
        #expect(ByteRange.evaluate("bytes=0-9223372036854775807", size: Int.max) == partial(0, Int.max))
        #expect(ByteRange.evaluate("bytes=1-", size: Int.max) == partial(1, Int.max - 1))
        #expect(ByteRange.evaluate("bytes=-\(huge)", size: Int.max) == partial(0, Int.max))
    }

    @Test func moreThanOneRangeIsServedWhole() {
        #expect(ByteRange.evaluate("bytes=0-1,5-6", size: 100) == .full)
        #expect(ByteRange.evaluate("bytes=0-1, 0-1", size: 100) == .full)
        #expect(ByteRange.evaluate("bytes=-1,0-", size: 100) == .full)
        #expect(ByteRange.evaluate("bytes=abc,0-1", size: 100) == .full)
        #expect(ByteRange.evaluate("bytes=0-1,5-6", size: 0) == .full)
    }

    @Test func contentRangeValues() {
        let range = ByteRange(offset: 0, length: 500)
        #expect(range.contentRange(size: 1234) == "bytes 0-499/1234")
        #expect(ByteRange(offset: 1233, length: 1).contentRange(size: 1234) == "bytes 1233-1233/1234")
        #expect(ByteRange.unsatisfiedContentRange(size: 1234) == "bytes */1234")
        #expect(ByteRange.unsatisfiedContentRange(size: 0) == "bytes */0")
        #expect(range.lastOffset == 499)
        #expect(range.range == 0..<500)
        #expect(range.description == "0-499")
    }

    @Test func ifRange() {
        let etag = "\"abc123\""
        #expect(ByteRange.ifRangeAllows(nil, etag: etag))
        #expect(ByteRange.ifRangeAllows("\"abc123\"", etag: etag))
        #expect(ByteRange.ifRangeAllows(" \"abc123\"\t", etag: etag))
        #expect(!ByteRange.ifRangeAllows("\"abc124\"", etag: etag))
        #expect(!ByteRange.ifRangeAllows("\"ABC123\"", etag: etag))
        #expect(!ByteRange.ifRangeAllows("abc123", etag: etag))
        #expect(!ByteRange.ifRangeAllows("\"abc123", etag: etag))
        #expect(!ByteRange.ifRangeAllows("", etag: etag))
        // Strong comparison: a weak tag never matches, on either side.
        #expect(!ByteRange.ifRangeAllows("W/\"abc123\"", etag: etag))
        #expect(!ByteRange.ifRangeAllows("W/\"abc123\"", etag: "W/\"abc123\""))
        // A date is not compared: the whole representation is sent.
        #expect(!ByteRange.ifRangeAllows("Sun, 06 Nov 1994 08:49:37 GMT", etag: etag))
        // A tag list is not an If-Range value.
        #expect(!ByteRange.ifRangeAllows("\"abc123\", \"x\"", etag: etag))
        // A malformed current tag never matches.
        #expect(!ByteRange.ifRangeAllows("abc", etag: "abc"))
        #expect(!ByteRange.ifRangeAllows("\"", etag: "\""))
    }

    /// Whatever the header, a partial answer lies inside the representation.
    @Test func randomHeadersStayInBounds() {
        var rng = SplitMix64(seed: 0xB17E5)
        let alphabet = Array("bytes=0123456789-, \t9BYTES".utf8)
        for _ in 0..<5000 {
            let length = Int(rng.next() % 24)
            var bytes: [UInt8] = []
            if rng.next() % 2 == 0 { bytes += Array("bytes=".utf8) }
            for _ in 0..<length { bytes.append(alphabet[Int(rng.next() % UInt64(alphabet.count))]) }
            let header = String(decoding: bytes, as: UTF8.self)
            let size = Int(rng.next() % 3 == 0 ? rng.next() % 3 : rng.next() % 2000)
            switch ByteRange.evaluate(header, size: size) {
            case .partial(let range):
                #expect(range.offset >= 0 && range.length >= 1 && range.offset + range.length <= size, "\(header) \(size)")
            case .full, .unsatisfiable:
                break
            }
        }
    }
}
