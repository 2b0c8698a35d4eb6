import TestSupport
import Testing
import Cryptography

@Suite(.testThreads) struct PBKDF2Tests {
    /// RFC 7914 §11.
    @Test func rfc7914Vectors() throws {
        let first = try PBKDF2.hmacSHA256(
            password: Array("passwd".utf8), salt: Array("salt".utf8),
            iterations: 1, keyLength: 64)
        #expect(
            Hex.encode(first)
                == "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
                + "49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783")
        let second = try PBKDF2.hmacSHA256(
            password: Array("Password".utf8),
            salt: Array("NaCl".utf8), iterations: 80_000,
            keyLength: 64)
        #expect(
            Hex.encode(second)
                == "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56"
                + "a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d")
    }

    @Test func rejectsInvalidInput() {
        expectSecurityError(.invalidParameters) {
            try PBKDF2.hmacSHA256(password: [], salt: [], iterations: 0, keyLength: 32)
        }
        expectSecurityError(.invalidParameters) {
            try PBKDF2.hmacSHA256(password: [], salt: [], iterations: 1, keyLength: 0)
        }
    }
}
