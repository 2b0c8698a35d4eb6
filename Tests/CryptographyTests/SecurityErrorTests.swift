import COpenSSL
import TestSupport
import Testing
@testable import Cryptography

@Suite(.testThreads) struct SecurityErrorTests {
    @Test func descriptionIsGenericAndDetailOnlyInDebugDescription() {
        let error = SecurityError(.malformedHash, detail: "malformed salt")
        #expect(error.code == .malformedHash)
        #expect(error.code.rawValue == "malformedHash")
        #expect("\(error)" == "SecurityError(malformedHash)")
        #expect(String(reflecting: error) == "SecurityError(malformedHash: malformed salt)")
    }

    @Test func errorsFromVerificationNeverCarryTheInput() throws {
        let hasher = try PasswordHasher(parameters: .testing, allowWeakParameters: true)
        let secret = "hunter2-secret"
        let phc = "$scrypt$ln=99,r=8,p=1$\(secret)$\(secret)"
        let error = #expect(throws: SecurityError.self) {
            try hasher.verify(password: secret, phc: phc)
        }
        #expect(error.map { !String(reflecting: $0).contains(secret) } == true)
    }

    @Test func openSSLFailureDrainsTheErrorQueue() {
        // A real failure: more memory than the cap allows.
        #expect(EVP_PBE_scrypt(nil, 0, nil, 0, 1 << 17, 8, 1, 1 << 20, nil, 0) != 1)
        #expect(ERR_peek_error() != 0)
        let error = SecurityError.openSSL(.hashingFailed, operation: "test")
        #expect(ERR_peek_error() == 0)
        #expect(String(reflecting: error).contains("memory limit exceeded"))
    }
}
