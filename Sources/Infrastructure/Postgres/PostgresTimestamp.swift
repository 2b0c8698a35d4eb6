import CivilTime
import FoundationEssentials

/// Conversions between `Date` and PostgreSQL's ISO text form of timestamptz, in UTC.
enum PostgresTimestamp {
    /// Appends `YYYY-MM-DD HH:MM:SS.ffffff+00` (with ` BC` before year 1).
    static func append(_ date: Date, to buffer: inout [UInt8]) {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite else {
            buffer.append(contentsOf: (seconds < 0 ? "-infinity" : "infinity").utf8)
            return
        }
        let micros = Int64((seconds * 1_000_000).rounded())
        let (wholeSeconds, fraction) = floorDivide(micros, 1_000_000)
        let (days, secondOfDay) = floorDivide(wholeSeconds, 86_400)
        let civil = CivilDate(daysSinceEpoch: days)
        appendDate(civil, to: &buffer, appendEra: false)
        buffer.append(UInt8(ascii: " "))
        appendPadded(secondOfDay / 3600, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay / 60 % 60, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay % 60, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: "."))
        appendPadded(fraction, width: 6, to: &buffer)
        buffer.append(contentsOf: "+00".utf8)
        if civil.year <= 0 { buffer.append(contentsOf: " BC".utf8) }
    }

    /// Appends `YYYY-MM-DD`, and ` BC` for years before 1 when `appendEra` is set.
    static func appendDate(_ civil: CivilDate, to buffer: inout [UInt8], appendEra: Bool) {
        appendPadded(civil.year <= 0 ? 1 - civil.year : civil.year, width: 4, to: &buffer)
        buffer.append(UInt8(ascii: "-"))
        appendPadded(civil.month, width: 2, to: &buffer)
        buffer.append(UInt8(ascii: "-"))
        appendPadded(civil.day, width: 2, to: &buffer)
        if appendEra, civil.year <= 0 { buffer.append(contentsOf: " BC".utf8) }
    }

    /// Parses timestamptz/timestamp output in DateStyle ISO; `infinity` maps to `Date.distantFuture`.
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws -> Date {
        // Only the infinities start with a letter or a sign (years before 1 end in ` BC`).
        if let first = bytes.first, first == UInt8(ascii: "i") || first == UInt8(ascii: "-") {
            if bytes.elementsEqual("infinity".utf8) { return .distantFuture }
            if bytes.elementsEqual("-infinity".utf8) { return .distantPast }
        }
        if let date = parseCommonForm(bytes) { return date }
        var scanner = ByteScanner(bytes: bytes)
        let civil = try scanner.date()
        guard scanner.take(UInt8(ascii: " ")) || scanner.take(UInt8(ascii: "T")) else { throw malformed }
        guard let hour = scanner.digits(exactly: 2), scanner.take(UInt8(ascii: ":")),
            let minute = scanner.digits(exactly: 2), scanner.take(UInt8(ascii: ":")),
            let second = scanner.digits(exactly: 2)
        else { throw malformed }
        var micros: Int64 = 0
        if scanner.take(UInt8(ascii: ".")) {
            var scale: Int64 = 100_000
            var count = 0
            while let digit = scanner.digit() {
                count += 1
                micros += Int64(digit) * scale
                scale /= 10
            }
            guard count > 0, count <= 6 else { throw malformed }
        }
        var offsetSeconds: Int64 = 0
        if let sign = scanner.peek(), sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
            scanner.position += 1
            guard let hours = scanner.digits(exactly: 2) else { throw malformed }
            var offset = hours * 3600
            if scanner.take(UInt8(ascii: ":")) {
                guard let minutes = scanner.digits(exactly: 2) else { throw malformed }
                offset += minutes * 60
                if scanner.take(UInt8(ascii: ":")) {
                    guard let seconds = scanner.digits(exactly: 2) else { throw malformed }
                    offset += seconds
                }
            }
            offsetSeconds = sign == UInt8(ascii: "+") ? offset : -offset
        }
        var year = civil.year
        if scanner.takeEra() { year = 1 - year }
        guard scanner.atEnd, hour < 24, minute < 60, second < 61 else { throw malformed }
        let days = CivilDate(year: year, month: civil.month, day: civil.day).daysSinceEpoch
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return Date(timeIntervalSince1970: Double(seconds) + Double(micros) / 1_000_000)
    }

    /// `YYYY-MM-DD HH:MM:SS.ffffff+00`, what a UTC connection returns for nearly every
    /// timestamptz, read by position; nil for any other form, which `parse` then reads in full.
    @inline(__always)
    private static func parseCommonForm(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        guard bytes.count == 29, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: " "),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "."),
            bytes[26] == UInt8(ascii: "+"), bytes[27] == UInt8(ascii: "0"), bytes[28] == UInt8(ascii: "0")
        else { return nil }
        var valid = true
        func number(_ start: Int, _ count: Int) -> Int64 {
            var value: Int64 = 0
            for index in start..<start + count {
                let digit = bytes[index] &- UInt8(ascii: "0")
                if digit > 9 { valid = false }
                value = value &* 10 &+ Int64(digit)
            }
            return value
        }
        let civil = CivilDate(year: number(0, 4), month: number(5, 2), day: number(8, 2))
        let hour = number(11, 2), minute = number(14, 2), second = number(17, 2), micros = number(20, 6)
        guard valid, civil.year >= 1, civil.isValid, hour < 24, minute < 60, second < 61 else { return nil }
        let seconds = civil.daysSinceEpoch * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: Double(seconds) + Double(micros) / 1_000_000)
    }

    static var malformed: PostgresDecodingFailure { PostgresDecodingFailure("malformed timestamp") }
}

/// A cursor over ASCII bytes for the date and time parsers.
struct ByteScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0

    var atEnd: Bool { position == bytes.count }

    func peek() -> UInt8? { position < bytes.count ? bytes[position] : nil }

    mutating func take(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        position += 1
        return true
    }

    mutating func digit() -> Int64? {
        guard let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
        position += 1
        return Int64(byte - UInt8(ascii: "0"))
    }

    mutating func digits(exactly count: Int) -> Int64? {
        var value: Int64 = 0
        for _ in 0..<count {
            guard let digit = digit() else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    /// `YYYY-MM-DD` with four or more year digits, validated against the calendar (era not applied).
    mutating func date() throws -> CivilDate {
        var year: Int64 = 0
        var yearDigits = 0
        while let digit = digit(), yearDigits < 9 {
            year = year * 10 + digit
            yearDigits += 1
        }
        guard yearDigits >= 4, take(UInt8(ascii: "-")), let month = digits(exactly: 2),
            take(UInt8(ascii: "-")), let day = digits(exactly: 2)
        else {
            throw PostgresDecodingFailure("malformed date")
        }
        let civil = CivilDate(year: year, month: month, day: day)
        guard civil.isValid, year >= 1 else { throw PostgresDecodingFailure("invalid calendar date") }
        return civil
    }

    /// Consumes a trailing ` BC`.
    mutating func takeEra() -> Bool {
        guard bytes.count - position >= 3, bytes[position] == UInt8(ascii: " "), bytes[position + 1] == UInt8(ascii: "B"),
            bytes[position + 2] == UInt8(ascii: "C")
        else { return false }
        position += 3
        return true
    }
}

@inline(__always)
func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
    var quotient = value / divisor
    var remainder = value % divisor
    if remainder < 0 {
        quotient -= 1
        remainder += divisor
    }
    return (quotient, remainder)
}

@inline(__always)
func appendPadded(_ value: Int64, width: Int, to buffer: inout [UInt8]) {
    var digits = 1
    var probe = value
    while probe >= 10 { probe /= 10; digits += 1 }
    if digits < width { buffer.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: width - digits)) }
    appendDecimal(value, to: &buffer)
}
