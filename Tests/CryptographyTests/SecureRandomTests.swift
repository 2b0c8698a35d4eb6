import TestSupport
import Testing
import Cryptography

@Suite(.testThreads) struct SecureRandomTests {
    @Test func producesRequestedCount() throws {
        #expect(try SecureRandom.bytes(count: 0) == [])
        #expect(try SecureRandom.bytes(count: 1).count == 1)
        #expect(try SecureRandom.bytes(count: 4096).count == 4096)
    }

    @Test func outputsDiffer() throws {
        let a = try SecureRandom.bytes(count: 32)
        let b = try SecureRandom.bytes(count: 32)
        #expect(a != b)
        #expect(a != [UInt8](repeating: 0, count: 32))
    }

    /// A crude sanity check, not a randomness test: a stuck or constant generator fails it.
    @Test func bitsAreRoughlyBalanced() throws {
        let bytes = try SecureRandom.bytes(count: 32_768)
        let ones = bytes.reduce(0) { $0 + $1.nonzeroBitCount }
        let bits = bytes.count * 8
        // Expected bits/2 with standard deviation sqrt(bits)/2 = 256; allow 8 sigma.
        #expect(abs(ones - bits / 2) < 2048)
        #expect(Set(bytes).count == 256)
    }
}
