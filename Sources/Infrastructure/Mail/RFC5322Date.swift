import CivilTime
import FoundationEssentials

/// The date-time of a Date header (RFC 5322 §3.3), always in UTC: "Tue, 03 Feb 2026 09:05:00 +0000".
enum RFC5322Date {
    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func string(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let (days, secondOfDay) = floorDivision(seconds, 86_400)
        let civil = CivilDate(daysSinceEpoch: days)
        let weekday = weekdays[Int(floorDivision(days, 7).remainder)]
        func twoDigits(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let time = [secondOfDay / 3600, secondOfDay / 60 % 60, secondOfDay % 60].map(twoDigits).joined(separator: ":")
        return "\(weekday), \(twoDigits(civil.day)) \(months[Int(civil.month) - 1]) \(civil.year) \(time) +0000"
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = (value % divisor + divisor) % divisor
        return ((value - remainder) / divisor, remainder)
    }
}
