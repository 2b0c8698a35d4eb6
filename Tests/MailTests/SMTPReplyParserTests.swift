import TestSupport
import Testing

@testable import Mail

@Suite(.testThreads) struct SMTPReplyParserTests {
    let parser = SMTPReplyParser()

    private func parse(_ text: String) -> SMTPReplyParser.Result { parser.parse(Array(text.utf8)) }

    @Test func singleLine() {
        #expect(parse("250 OK\r\n") == .complete(SMTPReply(code: 250, lines: ["OK"]), consumed: 8))
    }

    @Test func multiLine() {
        let text = "250-localhost\r\n250-SIZE 33554432\r\n250-AUTH PLAIN LOGIN\r\n250 HELP\r\n"
        let expected = SMTPReply(code: 250, lines: ["localhost", "SIZE 33554432", "AUTH PLAIN LOGIN", "HELP"])
        #expect(parse(text) == .complete(expected, consumed: text.utf8.count))
        #expect(expected.description == "250-localhost\n250-SIZE 33554432\n250-AUTH PLAIN LOGIN\n250 HELP")
    }

    @Test func codeAlone() {
        #expect(parse("354\r\n") == .complete(SMTPReply(code: 354, lines: [""]), consumed: 5))
    }

    @Test func needsMoreUntilTheLastLine() {
        let text = Array("250-first\r\n250 second\r\n".utf8)
        for end in 0..<text.count {
            #expect(parser.parse(text[..<end]) == .needMore, "prefix of \(end) bytes")
        }
        #expect(parser.parse(text) == .complete(SMTPReply(code: 250, lines: ["first", "second"]), consumed: text.count))
    }

    @Test func takesOnlyTheFirstOfPipelinedReplies() {
        #expect(parse("250 OK\r\n354 go ahead\r\n") == .complete(SMTPReply(code: 250, lines: ["OK"]), consumed: 8))
    }

    @Test func acceptsBareLineFeeds() {
        #expect(parse("220-hello\n220 there\n") == .complete(SMTPReply(code: 220, lines: ["hello", "there"]), consumed: 20))
    }

    @Test func keepsTheEnhancedStatusCodeInTheText() {
        #expect(parse("550 5.1.1 <x@y>: no such user\r\n") == .complete(SMTPReply(code: 550, lines: ["5.1.1 <x@y>: no such user"]), consumed: 31))
    }

    @Test func refusesWhatIsNotAReply() {
        for text in ["hello\r\n", "25\r\n", "2500 x\r\n", "25O OK\r\n", "199 x\r\n", "600 x\r\n", "260 x\r\n", "250+x\r\n", "250 a\u{1}b\r\n"] {
            guard case .malformed = parse(text) else {
                Issue.record("accepted \(text.debugDescription)")
                continue
            }
        }
    }

    @Test func refusesMixedCodes() {
        guard case .malformed(let reason) = parse("250-a\r\n251 b\r\n") else { return #expect(Bool(false)) }
        #expect(reason.contains("different codes"))
    }

    @Test func limitsTheLineLength() {
        let parser = SMTPReplyParser(maximumLineLength: 16)
        #expect(parser.parse(Array("250 ".utf8) + Array(repeating: UInt8(ascii: "x"), count: 11)) == .needMore)
        guard case .malformed = parser.parse(Array("250 ".utf8) + Array(repeating: UInt8(ascii: "x"), count: 12)) else {
            return #expect(Bool(false))
        }
        #expect(parser.parse(Array("250 0123456789\r\n".utf8)) == .complete(SMTPReply(code: 250, lines: ["0123456789"]), consumed: 16))
    }

    @Test func limitsTheLineCount() {
        let parser = SMTPReplyParser(maximumLineCount: 3)
        #expect(parser.parse(Array("250-a\r\n250-b\r\n250 c\r\n".utf8)) != .needMore)
        guard case .malformed = parser.parse(Array("250-a\r\n250-b\r\n250-c\r\n250 d\r\n".utf8)) else { return #expect(Bool(false)) }
    }

    @Test func replyClasses() {
        #expect(SMTPReply(code: 250, lines: []).isPositiveCompletion)
        #expect(SMTPReply(code: 354, lines: []).isPositiveIntermediate)
        #expect(SMTPReply(code: 451, lines: []).isTransientFailure)
        #expect(SMTPReply(code: 550, lines: []).isPermanentFailure)
    }
}
