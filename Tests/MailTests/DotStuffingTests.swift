import TestSupport
import Testing

@testable import Mail

@Suite(.testThreads) struct DotStuffingTests {
    private func stuffed(_ text: String) -> String { String(decoding: DotStuffing.encode(Array(text.utf8)), as: UTF8.self) }

    @Test func doublesLeadingDots() {
        #expect(stuffed("a\r\n.\r\n.x\r\nb\r\n") == "a\r\n..\r\n..x\r\nb\r\n.\r\n")
        #expect(stuffed(".first\r\n") == "..first\r\n.\r\n")
        #expect(stuffed("..two\r\n") == "...two\r\n.\r\n")
    }

    @Test func leavesOtherDotsAlone() {
        #expect(stuffed("x.y\r\n a.\r\n") == "x.y\r\n a.\r\n.\r\n")
    }

    @Test func endsTheLastLineBeforeTheTerminator() {
        #expect(stuffed("no line end") == "no line end\r\n.\r\n")
        #expect(stuffed("ends with a dot\r\n.") == "ends with a dot\r\n..\r\n.\r\n")
        #expect(stuffed("") == ".\r\n")
    }
}
