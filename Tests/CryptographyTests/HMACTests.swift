import Cryptography
import TestSupport
import Testing

/// HMAC-SHA-256 against RFC 4231's test vectors.
@Suite(.testThreads)
struct HMACTests {
    static func bytes(_ hex: String) -> [UInt8] { Hex.decode(hex)! }

    @Test func rfc4231Case1() {
        let mac = HMAC.sha256(key: [UInt8](repeating: 0x0B, count: 20), message: Array("Hi There".utf8))
        #expect(Hex.encode(mac) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
    }

    @Test func rfc4231Case2() {
        let mac = HMAC.sha256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Hex.encode(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func rfc4231Case6AKeyLongerThanABlock() {
        let mac = HMAC.sha256(
            key: [UInt8](repeating: 0xAA, count: 131), message: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
        #expect(Hex.encode(mac) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func anEmptyMessage() {
        #expect(HMAC.sha256(key: [1, 2, 3], message: []).count == 32)
    }
}
