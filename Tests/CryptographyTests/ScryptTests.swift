import TestSupport
import Testing
@testable import Cryptography

@Suite(.testThreads) struct ScryptTests {
    /// RFC 7914 §12 (the N=2^20 vector is left out: about 1 GiB and several seconds).
    @Test(arguments: [
        (
            "", "", 16 as UInt64, 1 as UInt64, 1 as UInt64,
            "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442"
                + "fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"
        ),
        (
            "password", "NaCl", 1024, 8, 16,
            "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162"
                + "2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"
        ),
        (
            "pleaseletmein", "SodiumChloride", 16384, 8, 1,
            "7023bdcb3afd7348461c06cd81fd38ebfda8fbba904f8e3ea9b543f6545da1f2"
                + "d5432955613f0fcf62d49705242a9af9e61e85dc0d651e40dfcf017b45575887"
        ),
    ])
    func rfc7914Vectors(
        password: String, salt: String, n: UInt64, r: UInt64, p: UInt64,
        expected: String
    ) throws {
        let key = try Scrypt.deriveKey(
            password: Array(password.utf8), salt: Array(salt.utf8),
            n: n, r: r, p: p, keyLength: 64)
        #expect(Hex.encode(key) == expected)
    }

    @Test func requiredMemoryMatchesOpenSSLExactly() throws {
        #expect(Scrypt.requiredMemory(n: 1 << 17, r: 8, p: 1) == 134_220_800)
        let memory = try #require(Scrypt.requiredMemory(n: 1024, r: 8, p: 16))
        let password = Array("password".utf8), salt = Array("NaCl".utf8)
        let key = try Scrypt.deriveKey(
            password: password, salt: salt, n: 1024, r: 8, p: 16,
            keyLength: 64, maxMemory: memory)
        #expect(Hex.encode(key).hasPrefix("fdbabe1c"))
        // One byte less and OpenSSL refuses: the figure is the exact bound, not a guess above it.
        expectSecurityError(.invalidParameters) {
            try Scrypt.deriveKey(
                password: password, salt: salt, n: 1024, r: 8, p: 16,
                keyLength: 64, maxMemory: memory - 1)
        }
    }

    @Test func rejectsInvalidParameters() {
        let bad: [(UInt64, UInt64, UInt64, Int)] = [
            (0, 8, 1, 32), (1, 8, 1, 32), (1000, 8, 1, 32), (1024, 0, 1, 32), (1024, 8, 0, 32),
            (1024, 8, 1, 0),
        ]
        for (n, r, p, length) in bad {
            expectSecurityError(.invalidParameters) {
                try Scrypt.deriveKey(password: [], salt: [], n: n, r: r, p: p, keyLength: length)
            }
        }
        #expect(Scrypt.requiredMemory(n: UInt64.max, r: 8, p: 1) == nil)
    }
}
