import FoundationEssentials
import Postgres
import TestSupport
import Testing

/// Round trips through a typed column and back, so that both encoding and decoding are exercised.
@Suite(.testThreads) struct PostgresTypesTests {
    func roundTrip<Value: PostgresEncodable & PostgresDecodable & Equatable>(
        _ values: [Value], column type: String, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let pool = try TestDatabase.pool()
        let table = TestDatabase.uniqueName("roundtrip")
        try pool.withConnection { connection in
            try connection.execute("CREATE TABLE \(identifier: table) (position int PRIMARY KEY, value \(unsafeRaw: type))")
            for (position, value) in values.enumerated() {
                try connection.execute("INSERT INTO \(identifier: table) VALUES (\(Int32(position)), \(value))")
            }
            let rows = try connection.query("SELECT value FROM \(identifier: table) ORDER BY position")
            let decoded = try rows.map { try $0.decode(Value.self, column: "value") }
            #expect(decoded == values, sourceLocation: sourceLocation)
            // And as a bare parameter echoed by the server.
            for value in values {
                let echoed = try connection.query("SELECT \(value)::\(unsafeRaw: type) AS value")[0].decode(Value.self, at: 0)
                #expect(echoed == value, sourceLocation: sourceLocation)
            }
        }
    }

    @Test func integers() throws {
        try roundTrip([Int64.min, -1, 0, 1, Int64.max], column: "bigint")
        try roundTrip([Int.min, 0, Int.max], column: "int8")
        try roundTrip([Int32.min, -1, 0, Int32.max], column: "integer")
        try roundTrip([Int16.min, 0, Int16.max], column: "smallint")
    }

    @Test func integerDecodingChecksRange() throws {
        let pool = try TestDatabase.pool()
        let error = postgresError { _ = try pool.query("SELECT 40000::int4 AS big")[0].decode(Int16.self, at: 0) }
        #expect(error?.code == .decodingFailed)
        #expect(error?.columnName == "big")
    }

    @Test func doublesIncludingSpecialValues() throws {
        try roundTrip(
            [
                0.0, -0.5, 0.1, 1.0 / 3.0, 1e308, -2.2250738585072014e-308, .greatestFiniteMagnitude,
                .infinity, -.infinity,
            ], column: "float8")
        let pool = try TestDatabase.pool()
        let nan = try pool.query("SELECT \(Double.nan)::float8")[0].decode(Double.self, at: 0)
        #expect(nan.isNaN)
        let stored = try pool.query("SELECT 'NaN'::float8 = \(Double.nan)")[0].decode(Bool.self, at: 0)
        #expect(stored)
    }

    @Test func stringsIncludingEmptyAndNonASCII() throws {
        try roundTrip(
            [
                "", "a", "héllo wörld", "日本語", "👩‍👩‍👧‍👦 emoji 🎉", "quote ' double \" back \\ slash",
                "line\nbreak\ttab", String(repeating: "x", count: 100_000),
            ], column: "text")
        try roundTrip(["varchar ✓"], column: "varchar(20)")
    }

    @Test func booleans() throws {
        try roundTrip([true, false], column: "boolean")
    }

    @Test func uuids() throws {
        try roundTrip(
            [
                UUID(), UUID(), UUID(uuidString: "00000000-0000-0000-0000-000000000000")!,
                UUID(uuidString: "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF")!,
            ], column: "uuid")
    }

    @Test func calendarDates() throws {
        let dates = ["1994-05-17", "0001-01-01", "9999-12-31", "2024-02-29", "1970-01-01"].map { PostgresDate($0)! }
        try roundTrip(dates, column: "date")
        #expect(PostgresDate("2023-02-29") == nil)
        #expect(PostgresDate("1994-5-17") == nil)
        #expect(PostgresDate(year: 1994, month: 5, day: 17)?.description == "1994-05-17")
    }

    @Test func timestamps() throws {
        let pool = try TestDatabase.pool()
        let instants: [Date] = [
            Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: 1_700_000_000.123456),
            Date(timeIntervalSince1970: -1.5),
            Date(timeIntervalSince1970: -2_208_988_800),  // 1900-01-01
            Date(timeIntervalSince1970: 253_402_300_799.999999),  // 9999-12-31 23:59:59.999999
        ]
        for instant in instants {
            let back = try pool.query("SELECT \(instant)")[0].decode(Date.self, at: 0)
            let tolerance = max(1e-6, 2 * instant.timeIntervalSince1970.magnitude.ulp)
            #expect(abs(back.timeIntervalSince1970 - instant.timeIntervalSince1970) <= tolerance, "\(instant)")
        }
        let text = try pool.query("SELECT \(Date(timeIntervalSince1970: 1_700_000_000.5))::text")[0].decode(String.self, at: 0)
        #expect(text == "2023-11-14 22:13:20.5+00")
        let fromServer = try pool.query("SELECT '2026-11-29 17:39:01.123+07'::timestamptz")[0].decode(Date.self, at: 0)
        #expect(abs(fromServer.timeIntervalSince1970 - 1_795_948_741.123) < 1e-5)
        let infinite = try pool.query("SELECT 'infinity'::timestamptz")[0].decode(Date.self, at: 0)
        #expect(infinite == .distantFuture)
    }

    @Test func numericAsDecimalString() throws {
        let values = ["0", "-0.5", "12345678901234567890.123456789012345678", "1e-20", "NaN"].map { PostgresNumeric($0)! }
        let pool = try TestDatabase.pool()
        for value in values {
            let back = try pool.query("SELECT \(value)")[0].decode(PostgresNumeric.self, at: 0)
            let same = try pool.query("SELECT \(value) = \(back)")[0].decode(Bool.self, at: 0)
            #expect(same, "\(value) came back as \(back)")
        }
        #expect(PostgresNumeric("12.5.1") == nil)
        #expect(PostgresNumeric("1e") == nil)
        let exact = try pool.query("SELECT 0.1::numeric + 0.2::numeric")[0].decode(PostgresNumeric.self, at: 0)
        #expect(exact.description == "0.3")
    }

    @Test func byteaIncludingEmptyAndLarge() throws {
        // 5 MiB of xorshift noise (a system generator per byte is slow in debug builds).
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let large = [UInt8](unsafeUninitializedCapacity: 5 * 1024 * 1024) { buffer, count in
            for index in buffer.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                buffer[index] = UInt8(truncatingIfNeeded: state >> 24)
            }
            count = buffer.count
        }
        try roundTrip([[], [0], [0, 1, 127, 128, 255], Array(0...255)], column: "bytea")
        let pool = try TestDatabase.pool()
        let table = TestDatabase.uniqueName("blob")
        try pool.execute("CREATE TABLE \(identifier: table) (data bytea)")
        try pool.execute("INSERT INTO \(identifier: table) VALUES (\(large))")
        let row = try pool.query("SELECT data, length(data) FROM \(identifier: table)")[0]
        let (back, length) = try row.decode(([UInt8], Int).self)
        #expect(length == large.count)
        #expect(back == large)
    }

    @Test func jsonbWithUnicodeEscapes() throws {
        let pool = try TestDatabase.pool()
        let document = PostgresJSON(#"{"name": "\u00e9\ud83d\ude00 caf\u00e9", "list": [1, 2.5, null, true], "nested": {"k": "\"q\""}}"#)
        let table = TestDatabase.uniqueName("json")
        try pool.execute("CREATE TABLE \(identifier: table) (doc jsonb)")
        try pool.execute("INSERT INTO \(identifier: table) VALUES (\(document))")
        // A plain String parameter is also accepted by a jsonb column (its type is inferred).
        try pool.execute("INSERT INTO \(identifier: table) VALUES (\(#"{"b": 1}"#))")
        let back = try pool.query("SELECT doc FROM \(identifier: table) ORDER BY doc ? 'name' DESC")
        #expect(
            try back[0].decode(PostgresJSON.self, at: 0).text
                == #"{"list": [1, 2.5, null, true], "name": "é😀 café", "nested": {"k": "\"q\""}}"#)
        #expect(try back[1].decode(String.self, at: 0) == #"{"b": 1}"#)
        let name = try pool.query("SELECT doc->>'name' FROM \(identifier: table) WHERE doc ? 'name'")[0].decode(String.self, at: 0)
        #expect(name == "é😀 café")
        let invalid = postgresError { try pool.query("SELECT \(PostgresJSON("{not json"))") }
        #expect(invalid?.sqlState == .invalidTextRepresentation)
    }

    @Test func nullsAndOptionals() throws {
        let pool = try TestDatabase.pool()
        let table = TestDatabase.uniqueName("nulls")
        try pool.execute("CREATE TABLE \(identifier: table) (i int8, s text, b bool, u uuid, d date, t timestamptz, x bytea, j jsonb)")
        let none: Int? = nil
        let noText: String? = nil
        let noBool: Bool? = nil
        let noUUID: UUID? = nil
        let noDate: PostgresDate? = nil
        let noTime: Date? = nil
        let noBytes: [UInt8]? = nil
        let noJSON: PostgresJSON? = nil
        try pool.execute(
            "INSERT INTO \(identifier: table) VALUES (\(none), \(noText), \(noBool), \(noUUID), \(noDate), \(noTime), \(noBytes), \(noJSON))")
        try pool.execute(
            "INSERT INTO \(identifier: table) VALUES (\(Int?.some(7)), \(String?.some("")), NULL, NULL, NULL, NULL, \([UInt8]?.some([])), NULL)")
        let rows = try pool.query("SELECT i, s, b, u, d, t, x, j FROM \(identifier: table) ORDER BY i NULLS FIRST")
        let first = try rows[0].decode((Int?, String?, Bool?, UUID?, PostgresDate?, Date?, [UInt8]?, PostgresJSON?).self)
        #expect(first.0 == nil && first.1 == nil && first.2 == nil && first.3 == nil)
        #expect(first.4 == nil && first.5 == nil && first.6 == nil && first.7 == nil)
        #expect(rows[0].isNull(at: 0))
        let second = try rows[1].decode((Int?, String?).self)
        #expect(second.0 == 7 && second.1 == "")
        #expect(try rows[1].decode([UInt8]?.self, column: "x") == [])
        let error = postgresError { _ = try rows[0].decode(Int.self, column: "i") }
        #expect(error?.code == .decodingFailed)
        #expect(error?.columnName == "i")
    }

    @Test func decodingErrorsNameTheColumn() throws {
        let pool = try TestDatabase.pool()
        let rows = try pool.query("SELECT 1 AS id, 'not a number' AS \"favouriteNumber\"")
        let error = postgresError { _ = try rows[0].decode((Int, Int).self) }
        #expect(error?.code == .decodingFailed)
        #expect(error?.columnName == "favouriteNumber")
        #expect(error?.debugDescription.contains("favouriteNumber") == true)
        #expect(error?.description.contains("not a number") == false)
        let missing = postgresError { _ = try rows[0].decode(Int.self, column: "nope") }
        #expect(missing?.columnName == "nope")
        #expect(try rows[0].decode(Int.self, column: "id") == 1)
    }
}
