import TestSupport
import Testing
import Cryptography

@Suite(.testThreads) struct HexTests {
    @Test func roundTrip() {
        let bytes: [UInt8] = [0x00, 0x01, 0x7f, 0x80, 0xab, 0xff]
        #expect(Hex.encode(bytes) == "00017f80abff")
        #expect(Hex.decode("00017f80abff") == bytes)
        #expect(Hex.decode("00017F80ABFF") == bytes)
        #expect(Hex.decode("") == [])
    }

    @Test func rejectsMalformed() {
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("zz") == nil)
        #expect(Hex.decode("0x00") == nil)
    }
}
