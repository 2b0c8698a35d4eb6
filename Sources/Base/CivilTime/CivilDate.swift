/// A proleptic Gregorian calendar date; year 0 is 1 BC. The one copy of the calendar arithmetic:
/// HTTP dates, PostgreSQL timestamps and custom date fields all use it.
public struct CivilDate: Hashable, Sendable {
    public var year: Int64
    public var month: Int64
    public var day: Int64

    public init(year: Int64, month: Int64, day: Int64) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// From days since 1970-01-01 (Howard Hinnant's civil_from_days).
    public init(daysSinceEpoch: Int64) {
        let z = daysSinceEpoch + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Days since 1970-01-01 (Howard Hinnant's days_from_civil).
    public var daysSinceEpoch: Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    public var isValid: Bool {
        month >= 1 && month <= 12 && day >= 1 && day <= CivilDate.daysInMonth(year: year, month: month)
    }

    /// The length of a month (1–12) of `year`.
    public static func daysInMonth(year: Int64, month: Int64) -> Int64 {
        // A switch, not an array of lengths: this runs for every timestamp a query returns.
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
