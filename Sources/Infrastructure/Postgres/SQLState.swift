/// A five-character SQLSTATE code with named constants for the ones the domain code handles.
public struct SQLState: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    /// The two-character class, e.g. `23` for integrity constraint violations.
    public var errorClass: Substring { rawValue.prefix(2) }

    public static let uniqueViolation = SQLState("23505")
    public static let foreignKeyViolation = SQLState("23503")
    public static let notNullViolation = SQLState("23502")
    public static let checkViolation = SQLState("23514")
    public static let exclusionViolation = SQLState("23P01")
    public static let serializationFailure = SQLState("40001")
    public static let deadlockDetected = SQLState("40P01")
    public static let queryCanceled = SQLState("57014")
    public static let adminShutdown = SQLState("57P01")
    public static let crashShutdown = SQLState("57P02")
    public static let cannotConnectNow = SQLState("57P03")
    public static let tooManyConnections = SQLState("53300")
    public static let lockNotAvailable = SQLState("55P03")
    public static let readOnlySQLTransaction = SQLState("25006")
    public static let undefinedTable = SQLState("42P01")
    public static let undefinedColumn = SQLState("42703")
    public static let syntaxError = SQLState("42601")
    public static let invalidTextRepresentation = SQLState("22P02")
    public static let numericValueOutOfRange = SQLState("22003")
    public static let stringDataRightTruncation = SQLState("22001")
    public static let characterNotInRepertoire = SQLState("22021")
    public static let invalidParameterValue = SQLState("22023")

    /// Class 08 and the shutdown codes: the connection is gone.
    public var isConnectionError: Bool {
        errorClass == "08" || self == .adminShutdown || self == .crashShutdown || self == .cannotConnectNow
    }
}
