import TestSupport
import Testing
import Cryptography

@Suite(.testThreads) struct ScryptParametersTests {
    @Test func owaspDefaults() {
        let owasp = ScryptParameters.owasp
        #expect((owasp.logN, owasp.r, owasp.p) == (17, 8, 1))
        #expect(owasp.n == 131_072)
        #expect(owasp.maxMemory == 134_220_800)  // 128·8·(2^17+2) + 128·8·1
        #expect(owasp.isAtLeastOWASP)
        #expect(owasp.description == "ln=17,r=8,p=1")
        #expect(!ScryptParameters.testing.isAtLeastOWASP)
    }

    @Test func maxMemoryFormula() throws {
        let parameters = try ScryptParameters(logN: 14, r: 8, p: 3)
        #expect(parameters.maxMemory == 128 * 8 * (16384 + 2) + 128 * 8 * 3)
    }

    @Test func bounds() throws {
        _ = try ScryptParameters(logN: 10, r: 1, p: 1)
        _ = try ScryptParameters(logN: 20, r: 8, p: 16)
        _ = try ScryptParameters(logN: 15, r: 32, p: 16)
        let outside = [
            (9, 8, 1), (21, 8, 1), (17, 0, 1), (17, 33, 1), (17, 8, 0), (17, 8, 17),
            (-1, 8, 1), (99, 8, 1),
            (20, 32, 1),
        ]  // within each range, but 4 GiB
        for (logN, r, p) in outside {
            expectSecurityError(.invalidParameters) {
                try ScryptParameters(logN: logN, r: r, p: p)
            }
        }
    }

    @Test func owaspFloorIsComponentwise() throws {
        #expect(try ScryptParameters(logN: 18, r: 8, p: 1).isAtLeastOWASP)
        #expect(try ScryptParameters(logN: 17, r: 16, p: 2).isAtLeastOWASP)
        #expect(try !ScryptParameters(logN: 16, r: 16, p: 1).isAtLeastOWASP)
        #expect(try !ScryptParameters(logN: 17, r: 4, p: 4).isAtLeastOWASP)
    }
}
