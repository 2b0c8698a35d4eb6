import TestSupport
import Testing

@testable import Mail

@Suite(.testThreads) struct EncodedWordTests {
    @Test func knowsWhenItIsNeeded() {
        #expect(!EncodedWord.isNeeded(for: "Reset your password"))
        #expect(EncodedWord.isNeeded(for: "Pengaturan ulang — ✓"))
        #expect(EncodedWord.isNeeded(for: "looks =?like?= a word"))
        #expect(EncodedWord.isNeeded(for: "tab\there"))
    }

    @Test func qForMostlyASCII() {
        #expect(EncodedWord.encode("café au lait") == ["=?UTF-8?Q?caf=C3=A9_au_lait?="])
    }

    @Test func bForMostlyNonASCII() {
        #expect(EncodedWord.encode("密码重置") == ["=?UTF-8?B?5a+G56CB6YeN572u?="])
    }

    @Test func splitsIntoWordsOfWholeCharacters() {
        let subject = "Pengaturan ulang kata sandi — Aplikasi Sehat ✓"
        let words = EncodedWord.encode(subject, firstLength: 60)
        #expect(words.count > 1)
        #expect(words[0].utf8.count <= 60)
        #expect(words.allSatisfy { $0.utf8.count <= 75 })
        // Each word alone is valid UTF-8: no character is split between two.
        #expect(words.allSatisfy { Decoders.encodedWords([$0]).unicodeScalars.allSatisfy { $0 != "\u{FFFD}" } })
        #expect(Decoders.encodedWords(words) == subject)
    }

    @Test func roundTripsRandomText() {
        var generator = SeededGenerator(state: 2047)
        let alphabet = Array("aZ09 _=?!*+-/\"(),.:;<>@[\\]\u{e9}\u{2014}\u{2713}\u{1F600}\u{5bc6}")
        for _ in 0..<300 {
            let text = String((0..<Int.random(in: 1..<200, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            let words = EncodedWord.encode(text, firstLength: 50)
            #expect(Decoders.encodedWords(words) == text)
            #expect(words[0].utf8.count <= 50)
            #expect(words.allSatisfy { $0.utf8.count <= 75 && !$0.contains(" ") })
        }
    }
}
