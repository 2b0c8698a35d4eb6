import Foundation

/// A day of the Gregorian calendar (`1994-05-17`) with no time and no time zone: the value of a
/// custom field of type `date`, such as a date of birth.
///
/// A `Date` is an instant, which every time zone shows as a different day; a birthday is not.
/// Convert at the edges of the app, with the calendar the user sees:
///
/// ```swift
/// let birthday = CalendarDate(datePicker.date, in: .current)   // the day the picker shows
/// datePicker.date = birthday.date(in: .current)               // midnight of that day, there
/// ```
public struct CalendarDate: Hashable, Comparable, Sendable, Codable, CustomStringConvertible, LosslessStringConvertible {
    /// The year, 1 to 9999.
    public let year: Int
    /// The month, 1 to 12.
    public let month: Int
    /// The day of the month, 1 to 31.
    public let day: Int

    /// The date `year`-`month`-`day`, or nil when there is no such day (February 30, month 13).
    public init?(year: Int, month: Int, day: Int) {
        guard CalendarDate.isValid(year: year, month: month, day: day) else { return nil }
        self.init(uncheckedYear: year, month: month, day: day)
    }

    /// Parses exactly `YYYY-MM-DD`, as the API writes a `date` field.
    public init?(_ description: String) {
        let bytes = Array(description.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = Timestamp.number(bytes, 0, 4), let month = Timestamp.number(bytes, 5, 2),
            let day = Timestamp.number(bytes, 8, 2)
        else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// The day that `date` falls on in `timeZone`.
    public init(_ date: Date, in timeZone: TimeZone) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.init(date, calendar: calendar)
    }

    /// The day that `date` falls on in `calendar`'s time zone, counted in the Gregorian calendar.
    public init(_ date: Date, calendar: Calendar) {
        var gregorian = Calendar(identifier: .gregorian)
        gregorian.timeZone = calendar.timeZone
        let parts = gregorian.dateComponents([.year, .month, .day], from: date)
        self.init(uncheckedYear: parts.year ?? 1970, month: parts.month ?? 1, day: parts.day ?? 1)
    }

    init(uncheckedYear year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The first instant of this day in `timeZone` (for a date picker).
    public func date(in timeZone: TimeZone) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let components = DateComponents(year: year, month: month, day: day)
        return calendar.date(from: components) ?? Date(timeIntervalSince1970: Double(daysSince1970) * 86_400)
    }

    /// `YYYY-MM-DD`.
    public var description: String {
        func pad(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))"
    }

    /// Earlier days first.
    public static func < (left: CalendarDate, right: CalendarDate) -> Bool {
        (left.year, left.month, left.day) < (right.year, right.month, right.day)
    }

    /// Decodes from `"YYYY-MM-DD"`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let date = CalendarDate(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(text) is not a YYYY-MM-DD date")
        }
        self = date
    }

    /// Encodes as `"YYYY-MM-DD"`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    // MARK: - Arithmetic on days

    static func isValid(year: Int, month: Int, day: Int) -> Bool {
        guard (1...9999).contains(year), (1...12).contains(month), day >= 1 else { return false }
        let lengths = [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        return day <= lengths[month - 1]
    }

    static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    /// Days from 1970-01-01 (Howard Hinnant's `days_from_civil`).
    var daysSince1970: Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
    init(daysSince1970 days: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        self.init(uncheckedYear: yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month: month, day: day)
    }
}
