import CLibPQ
import Glibc

/// One result row; values are decoded on demand and decoding errors name the column.
public struct PostgresRow: Sendable {
    let result: PostgresResult
    let row: Int32

    /// The number of columns.
    public var columnCount: Int { result.columnCount }

    /// Decodes the column at `index` (0-based).
    public func decode<Value: PostgresDecodable>(_: Value.Type, at index: Int) throws -> Value {
        guard index >= 0, index < result.columnCount else {
            throw PostgresError(code: .decodingFailed, context: "no column at index \(index) (the row has \(result.columnCount))")
        }
        return try decodeColumn(Int32(index), as: Value.self)
    }

    /// Decodes the column named `name` (exact, case-sensitive match on the result's column name).
    public func decode<Value: PostgresDecodable>(_: Value.Type, column name: String) throws -> Value {
        guard let index = columnIndex(name) else {
            throw PostgresError(code: .decodingFailed, columnName: name, context: "no such column in the result")
        }
        return try decodeColumn(index, as: Value.self)
    }

    /// Decodes the leading columns into a tuple: `let (id, name) = try row.decode((UUID, String).self)`.
    public func decode<each Value: PostgresDecodable>(_: (repeat each Value).Type) throws -> (repeat each Value) {
        var index: Int32 = 0
        func next<Column: PostgresDecodable>(_: Column.Type) throws -> Column {
            defer { index += 1 }
            guard index < Int32(result.columnCount) else {
                throw PostgresError(code: .decodingFailed, context: "asked for more columns than the row's \(result.columnCount)")
            }
            return try decodeColumn(index, as: Column.self)
        }
        return (repeat try next((each Value).self))
    }

    /// True when the column at `index` is SQL NULL.
    public func isNull(at index: Int) -> Bool {
        PQgetisnull(result.handle, row, Int32(index)) == 1
    }

    func columnIndex(_ name: String) -> Int32? {
        let handle = result.handle
        return name.withCString { wanted in
            for column in 0..<Int32(result.columnCount) where strcmp(PQfname(handle, column), wanted) == 0 {
                return column
            }
            return nil
        }
    }

    @inline(__always)
    func decodeColumn<Value: PostgresDecodable>(_ column: Int32, as _: Value.Type) throws -> Value {
        let handle = result.handle
        let type = PostgresDataType(rawValue: PQftype(handle, column))
        do {
            if PQgetisnull(handle, row, column) == 1 {
                return try Value.decodeNull(type: type)
            }
            let length = Int(PQgetlength(handle, row, column))
            let start = UnsafeRawPointer(PQgetvalue(handle, row, column)!).assumingMemoryBound(to: UInt8.self)
            return try Value.decode(text: PostgresText(UnsafeBufferPointer(start: start, count: length)), type: type)
        } catch let failure as PostgresDecodingFailure {
            throw decodingError(column: column, type: type, reason: failure.reason, swiftType: Value.self)
        } catch {
            throw decodingError(column: column, type: type, reason: String(describing: error), swiftType: Value.self)
        }
    }

    func decodingError(column: Int32, type: PostgresDataType, reason: String, swiftType: Any.Type) -> PostgresError {
        let name = String(cString: PQfname(result.handle, column))
        return PostgresError(
            code: .decodingFailed, columnName: name,
            context: "column \"\(name)\" (index \(column), \(type)) as \(swiftType): \(reason)")
    }
}
