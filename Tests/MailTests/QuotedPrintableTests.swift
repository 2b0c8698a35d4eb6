import TestSupport
import Testing

@testable import Mail

@Suite(.testThreads) struct QuotedPrintableTests {
    private func encode(_ text: String) -> String { QuotedPrintable.encode(lines: MIMETextPart.lines(of: text)) }

    @Test func leavesPrintableASCIIAlone() {
        #expect(encode("Hello, world! <a href:\"x\"> ~") == "Hello, world! <a href:\"x\"> ~")
    }

    @Test func encodesTheEqualsSign() {
        #expect(encode("a=b") == "a=3Db")
    }

    @Test func encodesNonASCIIBytes() {
        #expect(encode("café ✓") == "caf=C3=A9 =E2=9C=93")
    }

    @Test func encodesWhitespaceAtLineEnds() {
        #expect(encode("a \nb\t\nc d") == "a=20\r\nb=09\r\nc d")
    }

    @Test func hardBreaksAreCRLF() {
        #expect(encode("one\r\ntwo\rthree\nfour\n") == "one\r\ntwo\r\nthree\r\nfour\r\n")
    }

    @Test func softBreaksKeepLinesWithin76() {
        #expect(encode(String(repeating: "a", count: 76)) == String(repeating: "a", count: 76))
        #expect(encode(String(repeating: "a", count: 77)) == String(repeating: "a", count: 75) + "=\r\naa")
        let long = String(repeating: "0123456789", count: 30)
        let encoded = encode(long)
        let lines = encoded.split(separator: "\r\n", omittingEmptySubsequences: false)
        #expect(lines.count == 4)
        #expect(lines.allSatisfy { $0.utf8.count <= 76 })
        #expect(lines.dropLast().allSatisfy { $0.hasSuffix("=") })
        #expect(Decoders.quotedPrintable(encoded) == Array(long.utf8))
    }

    @Test func neverSplitsAnEscapeOrACharacter() {
        // 74 letters leave room for "=" but not for "=C3=A9" before the soft break.
        let encoded = encode(String(repeating: "a", count: 74) + "é")
        #expect(encoded == String(repeating: "a", count: 74) + "=\r\n=C3=A9")
    }

    @Test func roundTripsRandomText() {
        var generator = SeededGenerator(state: 2045)
        let alphabet = Array("ab =\t.\u{e9}\u{2014}\u{2713}\u{1F600}xyz\n\r\n")
        for _ in 0..<300 {
            let text = String((0..<Int.random(in: 0..<400, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let encoded = encode(text)
            let normalized = MIMETextPart.lines(of: text).joined(separator: "\r\n")
            #expect(Decoders.quotedPrintable(encoded) == Array(normalized.utf8))
            for line in encoded.split(separator: "\r\n", omittingEmptySubsequences: false) {
                #expect(line.utf8.count <= 76)
                #expect(line.utf8.allSatisfy { (0x21...0x7E).contains($0) || $0 == 0x20 || $0 == 0x09 })
                #expect(line.last != " " && line.last != "\t")
            }
        }
    }
}
