import Foundation

/// RFC 3339 timestamps, read and written without `DateFormatter` (whose behaviour depends on the
/// locale and calendar of the device).
enum Timestamp {
    /// `2026-11-29T17:39:01.123Z`, `2026-11-29T19:39:01+02:00`: any RFC 3339 date-time.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":")
        else { return nil }
        guard let year = number(bytes, 0, 4), let month = number(bytes, 5, 2), let day = number(bytes, 8, 2),
            let hour = number(bytes, 11, 2), let minute = number(bytes, 14, 2), let second = number(bytes, 17, 2),
            CalendarDate.isValid(year: year, month: month, day: day), hour < 24, minute < 60, second <= 60
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
            guard index > start, let value = Double("0." + String(decoding: bytes[start..<index], as: UTF8.self)) else { return nil }
            fraction = value
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard bytes.count - index == 6, bytes[index + 3] == UInt8(ascii: ":"),
                let hours = number(bytes, index + 1, 2), let minutes = number(bytes, index + 4, 2),
                hours < 24, minutes < 60
            else { return nil }
            offsetSeconds = (hours * 60 + minutes) * 60 * (bytes[index] == UInt8(ascii: "-") ? -1 : 1)
            index += 6
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = CalendarDate(uncheckedYear: year, month: month, day: day).daysSince1970
        let seconds = ((days * 24 + hour) * 60 + minute) * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// RFC 3339 in UTC with milliseconds, as the server writes them.
    static func format(_ date: Date) -> String {
        // To the nearest millisecond: -0.001 s is -1.0000000000000000208 ms in binary.
        let milliseconds = Int((date.timeIntervalSince1970 * 1000).rounded())
        var days = milliseconds / 86_400_000
        var rest = milliseconds % 86_400_000
        if rest < 0 {
            rest += 86_400_000
            days -= 1
        }
        let day = CalendarDate(daysSince1970: days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = rest % 1000
        let millisText = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(day)T\(two(rest / 3_600_000)):\(two(rest / 60_000 % 60)):\(two(rest / 1000 % 60)).\(millisText)Z"
    }

    static func number(_ bytes: [UInt8], _ from: Int, _ count: Int) -> Int? {
        guard from + count <= bytes.count else { return nil }
        var value = 0
        for byte in bytes[from..<(from + count)] {
            guard (0x30...0x39).contains(byte) else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }
}
