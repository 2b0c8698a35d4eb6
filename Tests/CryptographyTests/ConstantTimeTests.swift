import TestSupport
import Testing
import Cryptography

@Suite(.testThreads) struct ConstantTimeTests {
    @Test func equalAndUnequal() {
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([0, 2, 3], [1, 2, 3]))
        #expect(ConstantTime.equals([], []))
    }

    @Test func lengthMismatchIsUnequal() {
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.equals([], [0]))
        #expect(!ConstantTime.equals([1, 2], [1, 2, 3]))
    }
}
