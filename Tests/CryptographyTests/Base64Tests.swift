import TestSupport
import Testing
import Cryptography

@Suite(.testThreads) struct Base64Tests {
    /// RFC 4648 §10 vectors, padding removed.
    @Test func rfc4648Vectors() {
        let vectors = [
            ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64.encode(Array(plain.utf8)) == encoded)
            #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
            #expect(Base64.decode(encoded) == Array(plain.utf8))
            #expect(Base64URL.decode(encoded) == Array(plain.utf8))
        }
    }

    @Test func alphabetsDiffer() {
        let bytes: [UInt8] = [0xfb, 0xff, 0xbf]
        #expect(Base64.encode(bytes) == "+/+/")
        #expect(Base64URL.encode(bytes) == "-_-_")
        #expect(Base64URL.decode("+/+/") == nil)
        #expect(Base64.decode("-_-_") == nil)
    }

    @Test func roundTripsEveryLength() throws {
        for length in 0...70 {
            let bytes = try SecureRandom.bytes(count: length)
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
            #expect(Base64.decode(Base64.encode(bytes)) == bytes)
            #expect(Base64URL.encode(bytes).utf8.count == (length * 4 + 2) / 3)
        }
    }

    @Test func rejectsPadding() {
        #expect(Base64URL.decode("Zg==") == nil)
        #expect(Base64URL.decode("Zm8=") == nil)
        #expect(Base64.decode("Zg==") == nil)
        #expect(Base64.decode("Zm8=") == nil)
    }

    @Test func rejectsInvalidCharacters() {
        for text in ["Zm9v Yg", "Zm9v\nYg", "Zm9v.g", "Zm9vYg\0", "Zm9vé", "*m9v"] {
            #expect(Base64URL.decode(text) == nil, "\(text)")
            #expect(Base64.decode(text) == nil, "\(text)")
        }
    }

    @Test func rejectsImpossibleLength() {
        #expect(Base64URL.decode("Z") == nil)
        #expect(Base64URL.decode("Zm9vY") == nil)
    }

    @Test func rejectsNonCanonicalTrailingBits() {
        // "Zg" is the only text for [0x66]; "Zh".."Zv" set unused low bits.
        #expect(Base64URL.decode("Zh") == nil)
        #expect(Base64URL.decode("Zv") == nil)
        #expect(Base64URL.decode("Zm8") == [0x66, 0x6f])
        #expect(Base64URL.decode("Zm9") == nil)
        #expect(Base64URL.decode("Zm-") == nil)
        #expect(Base64.decode("Zm/") == nil)
    }
}
