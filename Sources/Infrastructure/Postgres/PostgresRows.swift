import CLibPQ

/// The rows of a statement's result, in order; also says how many rows a command affected.
public struct PostgresRows: RandomAccessCollection, Sendable {
    let result: PostgresResult

    init(result: PostgresResult) { self.result = result }

    public var startIndex: Int { 0 }
    public var endIndex: Int { result.rowCount }
    public subscript(position: Int) -> PostgresRow {
        precondition(position >= 0 && position < result.rowCount, "row index out of range")
        return PostgresRow(result: result, row: Int32(position))
    }

    /// Rows inserted, updated, deleted or selected, as reported by the command tag.
    public var affectedRows: Int {
        guard let tag = PQcmdTuples(result.handle) else { return 0 }
        return Int(String(cString: tag)) ?? 0
    }

    /// The result's column names, in order.
    public var columnNames: [String] {
        (0..<result.columnCount).map { String(cString: PQfname(result.handle, Int32($0))) }
    }
}

/// Owns one libpq result; cleared when the last row referring to it is gone.
final class PostgresResult: @unchecked Sendable {
    // Read-only after creation: libpq allows concurrent reads of a PGresult.
    let handle: OpaquePointer
    let rowCount: Int
    let columnCount: Int

    init(_ handle: OpaquePointer) {
        self.handle = handle
        rowCount = Int(PQntuples(handle))
        columnCount = Int(PQnfields(handle))
    }

    deinit { PQclear(handle) }
}
