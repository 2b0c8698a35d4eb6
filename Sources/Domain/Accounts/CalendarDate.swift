import CivilTime

/// `YYYY-MM-DD` dates and RFC 3339 date-times: validation and formatting, without Foundation.
public enum CalendarDate {
    /// Whether `text` is exactly a valid calendar date `YYYY-MM-DD`.
    public static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            let year = digits(bytes, 0, 4), let month = digits(bytes, 5, 2), let day = digits(bytes, 8, 2)
        else { return false }
        return isValid(year: year, month: month, day: day)
    }

    static func isValid(year: Int, month: Int, day: Int) -> Bool {
        CivilDate(year: Int64(year), month: Int64(month), day: Int64(day)).isValid
    }

    /// The decimal value of `count` ASCII digits at `offset`, or nil.
    static func digits(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> Int? {
        guard offset + count <= bytes.count else { return nil }
        var value = 0
        for byte in bytes[offset..<(offset + count)] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }
}

/// RFC 3339 date-times.
public enum RFC3339 {
    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `T`/`Z` in either case, leap second 60 allowed.
    public static func isValidDateTime(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 64,
            CalendarDate.isValid(String(decoding: bytes[0..<10], as: UTF8.self)),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let hour = CalendarDate.digits(bytes, 11, 2), let minute = CalendarDate.digits(bytes, 14, 2),
            let second = CalendarDate.digits(bytes, 17, 2),
            hour <= 23, minute <= 59, second <= 60
        else { return false }
        var index = 19
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
            guard index > start else { return false }
        }
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            return index + 1 == bytes.count
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, bytes[index + 3] == UInt8(ascii: ":"),
                let offsetHour = CalendarDate.digits(bytes, index + 1, 2), let offsetMinute = CalendarDate.digits(bytes, index + 4, 2)
            else { return false }
            return offsetHour <= 23 && offsetMinute <= 59
        default:
            return false
        }
    }

    /// `2026-11-29T17:39:01.123Z` for milliseconds since the Unix epoch (years 0–9999).
    public static func format(millisecondsSinceEpoch milliseconds: Int64) -> String {
        let ms = Int(milliseconds)
        let seconds = ms >= 0 ? ms / 1000 : (ms - 999) / 1000
        let millis = ms - seconds * 1000
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        let civil = CivilDate(daysSinceEpoch: Int64(days))
        let (year, month, day) = (Int(civil.year), Int(civil.month), Int(civil.day))
        // Written into the string's own storage: this runs several times per response.
        return String(unsafeUninitializedCapacity: 24) { buffer in
            func put(_ value: Int, at offset: Int, digits: Int) {
                var rest = value
                for i in stride(from: offset + digits - 1, through: offset, by: -1) {
                    buffer[i] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put(year, at: 0, digits: 4)
            buffer[4] = UInt8(ascii: "-")
            put(month, at: 5, digits: 2)
            buffer[7] = UInt8(ascii: "-")
            put(day, at: 8, digits: 2)
            buffer[10] = UInt8(ascii: "T")
            put(secondOfDay / 3600, at: 11, digits: 2)
            buffer[13] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, at: 14, digits: 2)
            buffer[16] = UInt8(ascii: ":")
            put(secondOfDay % 60, at: 17, digits: 2)
            buffer[19] = UInt8(ascii: ".")
            put(millis, at: 20, digits: 3)
            buffer[23] = UInt8(ascii: "Z")
            return 24
        }
    }
}
