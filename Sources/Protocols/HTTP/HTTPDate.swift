import CivilTime

/// IMF-fixdate formatting (`Sun, 06 Nov 1994 08:49:37 GMT`) without Foundation.
public enum HTTPDate {
    /// A formatted date, cheap to copy into every response of the same second.
    public struct Text: Sendable, Equatable {
        public let seconds: Int
        public let bytes: [UInt8]
        public var string: String { String(decoding: bytes, as: UTF8.self) }
    }

    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Formats seconds since the Unix epoch.
    public static func format(secondsSinceEpoch seconds: Int) -> Text {
        let dayNumber = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - dayNumber * 86_400
        let civil = CivilDate(daysSinceEpoch: Int64(dayNumber))
        let (year, month, day) = (Int(civil.year), Int(civil.month), Int(civil.day))
        var out: [UInt8] = []
        out.reserveCapacity(29)
        out.append(contentsOf: days[((dayNumber % 7) + 7) % 7].utf8)
        out.append(contentsOf: ", ".utf8)
        appendTwoDigits(day, &out)
        out.append(ASCII.space)
        out.append(contentsOf: months[month - 1].utf8)
        out.append(ASCII.space)
        appendTwoDigits(year / 100, &out)
        appendTwoDigits(year % 100, &out)
        out.append(ASCII.space)
        appendTwoDigits(secondOfDay / 3600, &out)
        out.append(ASCII.colon)
        appendTwoDigits(secondOfDay / 60 % 60, &out)
        out.append(ASCII.colon)
        appendTwoDigits(secondOfDay % 60, &out)
        out.append(contentsOf: " GMT".utf8)
        return Text(seconds: seconds, bytes: out)
    }

    private static func appendTwoDigits(_ value: Int, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "0") + UInt8(value / 10 % 10))
        out.append(UInt8(ascii: "0") + UInt8(value % 10))
    }
}
