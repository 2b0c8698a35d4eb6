/// An error from the database layer: a stable `code`, the server's SQLSTATE when there is one,
/// a generic `description` safe for users and the details in `debugDescription` for logs.
public struct PostgresError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure this is.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        public var description: String { rawValue }

        /// The connection could not be opened, or broke during the operation.
        case connectionFailed
        /// The server rejected a statement; see `sqlState`.
        case queryFailed
        /// No pooled connection became free before the acquire timeout.
        case poolTimeout
        /// The server did not answer a statement within the connection's response timeout; the
        /// connection was abandoned (the statement may or may not have run).
        case timedOut
        /// The pool was closed.
        case poolClosed
        /// A column value could not be converted to the requested Swift type.
        case decodingFailed
        /// A parameter could not be sent (for example text containing a NUL byte).
        case encodingFailed
        /// A migration file could not be read or applied.
        case migrationFailed
        /// An applied migration file was changed afterwards.
        case migrationChecksumMismatch
        /// A managed local cluster could not be created, started or stopped.
        case clusterFailed
        /// A pipelined statement was not run because an earlier one of its batch failed: nothing of
        /// it happened, so it is safe to run again.
        case statementAborted
        /// The layer was used in a way it does not support (for example a nested transaction).
        case invalidUsage
        /// The configuration (for example `DATABASE_URL`) is invalid.
        case invalidConfiguration
    }

    /// The kind of failure.
    public var code: Code
    /// The server's SQLSTATE, when the server reported the error.
    public var sqlState: SQLState?
    /// The server's primary message (may quote values: for logs only).
    public var serverMessage: String?
    /// The server's detail line (often quotes key values: personal data, never logged by default).
    public var serverDetail: String?
    /// The server's hint line.
    public var serverHint: String?
    /// The constraint the server names, e.g. `users_email_key` for a unique violation.
    public var constraintName: String?
    /// The table the server names.
    public var tableName: String?
    /// The result column involved in a decoding failure, or the column the server names.
    public var columnName: String?
    /// Further context for logs (a file name, a reason, a libpq message).
    public var context: String?

    public init(
        code: Code, sqlState: SQLState? = nil, serverMessage: String? = nil,
        columnName: String? = nil, context: String? = nil
    ) {
        self.code = code
        self.sqlState = sqlState
        self.serverMessage = serverMessage
        self.columnName = columnName
        self.context = context
    }

    /// Generic wording, safe to show to a user: never SQL, values or server messages.
    public var description: String {
        switch code {
        case .connectionFailed: return "The database is unavailable."
        case .poolTimeout: return "The database is busy."
        case .poolClosed: return "The database connection pool is closed."
        case .decodingFailed: return "A database value could not be read."
        case .encodingFailed: return "A database value could not be sent."
        case .migrationFailed, .migrationChecksumMismatch: return "The database schema could not be migrated."
        case .clusterFailed: return "The local database server could not be managed."
        case .invalidConfiguration: return "The database configuration is invalid."
        default: return "A database operation failed."
        }
    }

    /// Everything known about the failure, for server-side logs.
    public var debugDescription: String {
        var parts = ["PostgresError(\(code)"]
        if let sqlState { parts.append("sqlState: \(sqlState.rawValue)") }
        if let serverMessage { parts.append("message: \(serverMessage)") }
        if let serverHint { parts.append("hint: \(serverHint)") }
        if let constraintName { parts.append("constraint: \(constraintName)") }
        if let tableName { parts.append("table: \(tableName)") }
        if let columnName { parts.append("column: \(columnName)") }
        if let context { parts.append("context: \(context)") }
        return parts.joined(separator: ", ") + ")"
    }

    /// True for errors that a retry of the whole transaction may cure (40001, 40P01).
    public var isTransient: Bool {
        sqlState == .serializationFailure || sqlState == .deadlockDetected
    }
}
