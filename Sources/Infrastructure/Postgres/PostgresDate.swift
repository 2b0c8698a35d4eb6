import CivilTime

/// A calendar date with no time zone (PostgreSQL `date`), e.g. a date of birth.
public struct PostgresDate: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let year: Int
    public let month: Int
    public let day: Int

    /// A valid proleptic Gregorian date, years 1 through 9999; `nil` for 2023-02-30 and the like.
    public init?(year: Int, month: Int, day: Int) {
        guard year >= 1, year <= 9999,
            CivilDate(year: Int64(year), month: Int64(month), day: Int64(day)).isValid
        else { return nil }
        self.year = year
        self.month = month
        self.day = day
    }

    /// Parses exactly `YYYY-MM-DD`.
    public init?(_ string: String) {
        var string = string
        let parsed: CivilDate? = string.withUTF8 { bytes in
            guard bytes.count == 10 else { return nil }
            var scanner = ByteScanner(bytes: bytes)
            guard let civil = try? scanner.date(), scanner.atEnd else { return nil }
            return civil
        }
        guard let parsed else { return nil }
        self.init(year: Int(parsed.year), month: Int(parsed.month), day: Int(parsed.day))
    }

    /// `YYYY-MM-DD`.
    public var description: String {
        var buffer: [UInt8] = []
        PostgresTimestamp.appendDate(civil, to: &buffer, appendEra: false)
        return String(decoding: buffer, as: UTF8.self)
    }

    var civil: CivilDate { CivilDate(year: Int64(year), month: Int64(month), day: Int64(day)) }

    public static func < (lhs: PostgresDate, rhs: PostgresDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }
}

extension PostgresDate: PostgresEncodable {
    public func encode(into bindings: inout PostgresBindings) {
        bindings.appendText(type: .date) { PostgresTimestamp.appendDate(civil, to: &$0, appendEra: false) }
    }
}

extension PostgresDate: PostgresDecodable {
    public static func decode(text: PostgresText, type: PostgresDataType) throws -> PostgresDate {
        var scanner = ByteScanner(bytes: text.bytes)
        let civil = try scanner.date()
        guard scanner.atEnd, let date = PostgresDate(year: Int(civil.year), month: Int(civil.month), day: Int(civil.day))
        else { throw PostgresDecodingFailure("date outside years 1-9999") }
        return date
    }
}
