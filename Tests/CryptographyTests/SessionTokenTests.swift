import TestSupport
import Testing
import Cryptography

@Suite(.testThreads) struct SessionTokenTests {
    @Test func formatAndLength() throws {
        let token = try SessionToken.generate()
        #expect(token.text.utf8.count == 43)
        #expect(SessionToken.isWellFormed(token.text))
        #expect(Base64URL.decode(token.text)?.count == 32)
        #expect(SessionToken(token.text) == token)
    }

    @Test func thousandTokensAreUniqueAndUseTheWholeAlphabet() throws {
        let tokens = try (0..<1000).map { _ in try SessionToken.generate().text }
        #expect(Set(tokens).count == 1000)
        #expect(Set(tokens.map(SessionToken.hash(of:))).count == 1000)
        // 1000 × 42 full characters: all 64 symbols should appear, and each roughly 656 times.
        var counts: [Character: Int] = [:]
        for token in tokens { for character in token.dropLast() { counts[character, default: 0] += 1 } }
        #expect(counts.count == 64)
        #expect(counts.values.allSatisfy { (400...950).contains($0) })
    }

    @Test func hashIsSHA256OfTheText() throws {
        let token = try SessionToken.generate()
        #expect(token.hash == SHA256.hash(Array(token.text.utf8)))
        #expect(SessionToken.hash(of: token.text) == token.hash)
        #expect(token.hash.count == 32)
    }

    @Test func rejectsMalformedTokens() throws {
        let good = try SessionToken.generate().text
        let rejected = [
            "", String(good.dropLast()), good + "A", good + "=",
            String(good.dropLast()) + "+", String(good.dropLast()) + "/",
            String(good.dropLast()) + " ", String(repeating: "é", count: 43),
            // 43 characters whose last one has set unused bits.
            String(repeating: "A", count: 42) + "B",
        ]
        for text in rejected {
            #expect(!SessionToken.isWellFormed(text), "\(text)")
            #expect(SessionToken(text) == nil)
        }
        #expect(SessionToken.isWellFormed(String(repeating: "A", count: 42) + "E"))
    }

    @Test func descriptionIsRedacted() throws {
        let token = try SessionToken.generate()
        #expect(!"\(token)".contains(token.text))
        #expect(!String(reflecting: token).contains(token.text))
    }
}
