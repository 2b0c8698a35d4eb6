import Testing
import Cryptography

/// Expects `body` to throw a `SecurityError` with `code`.
func expectSecurityError<R>(
    _ code: SecurityError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> R
) {
    let error = #expect(throws: SecurityError.self, sourceLocation: sourceLocation) {
        _ = try body()
    }
    #expect(error?.code == code, sourceLocation: sourceLocation)
}
