import Cryptography
import TestSupport
import Testing

/// MD5 against RFC 1321's test suite.
@Suite(.testThreads) struct MD5Tests {
    @Test func rfc1321() {
        #expect(Hex.encode(MD5.hash([])) == "d41d8cd98f00b204e9800998ecf8427e")
        #expect(Hex.encode(MD5.hash(Array("abc".utf8))) == "900150983cd24fb0d6963f7d28e17f72")
        #expect(Hex.encode(MD5.hash(Array("message digest".utf8))) == "f96b697d7cb7938d525a2f31aaf161d0")
    }
}
