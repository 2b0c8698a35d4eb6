import HTTP
import TestSupport
import Testing

/// The codes are a stable contract with clients and logs: changing one is a breaking change.
@Suite(.testThreads) struct MultipartErrorTests {
    @Test func stableCodesAndStatuses() {
        let expected: [(MultipartError, String, Int)] = [
            (.malformed, "malformed", 400), (.invalidBoundary, "invalid_boundary", 400),
            (.partHeadTooLarge, "part_head_too_large", 400), (.tooManyParts, "too_many_parts", 400),
            (.noFilePart, "no_file_part", 422), (.multipleFileParts, "multiple_file_parts", 422),
        ]
        for (error, code, status) in expected {
            #expect(error.code.rawValue == code)
            #expect(error.status.code == status)
            #expect(!error.detail.isEmpty)
            #expect(error.description == "\(status) \(code): \(error.detail)")
        }
        #expect(Set(expected.map(\.1)).count == expected.count, "codes must be distinct")
    }

    @Test func equalityIgnoresTheDetail() {
        let specific = MultipartError(code: .malformed, status: .badRequest, detail: "The body has no boundary delimiter.")
        #expect(specific == .malformed)
        #expect(specific.hashValue == MultipartError.malformed.hashValue)
        #expect(specific != .invalidBoundary)
    }
}
