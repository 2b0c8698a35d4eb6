import Zip
import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct CRC32Tests {
    @Test func knownValues() {
        #expect(CRC32.checksum([]) == 0)
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum(Array("IEND".utf8)) == 0xAE42_6082)
    }
}
