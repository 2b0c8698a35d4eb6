import TestSupport
import Testing
@testable import Cryptography

@Suite(.testThreads) struct SHA256Tests {
    @Test func knownAnswers() {
        #expect(
            SHA256.hexDigest("abc".utf8)
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hexDigest([UInt8]())
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256.hexDigest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func sequenceAndArrayAgree() {
        let bytes = Array("The quick brown fox".utf8)
        #expect(SHA256.hash(bytes) == SHA256.hash(bytes.lazy.map { $0 }))
        #expect(SHA256.hash(bytes).count == SHA256.digestLength)
    }

    @Test func millionAs() {
        #expect(
            SHA256.hexDigest([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
