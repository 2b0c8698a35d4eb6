/// One offending member of a JSON request body, named by its path (`data.height`): the domain's
/// with its own code type (`AccountsError.FieldError`), the problem document's with the code as
/// sent (`Problem.FieldError`).
public struct FieldError<Code: Sendable & Equatable>: Sendable, Equatable {
    public var field: String
    public var code: Code
    public var detail: String

    public init(field: String, code: Code, detail: String) {
        self.field = field
        self.code = code
        self.detail = detail
    }
}
