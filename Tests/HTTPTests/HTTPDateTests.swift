import CivilTime
@testable import HTTP
import TestSupport
import Testing

@Suite(.testThreads) struct HTTPDateTests {
    @Test(arguments: [
        (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
        (784_111_777, "Sun, 06 Nov 1994 08:49:37 GMT"),  // RFC 9110 §5.6.7's example
        (946_684_799, "Fri, 31 Dec 1999 23:59:59 GMT"),
        (951_825_600, "Tue, 29 Feb 2000 12:00:00 GMT"),  // 2000 is a leap year (divisible by 400)
        (951_868_800, "Wed, 01 Mar 2000 00:00:00 GMT"),
        (1_709_251_199, "Thu, 29 Feb 2024 23:59:59 GMT"),
        (1_795_973_941, "Sun, 29 Nov 2026 17:39:01 GMT"),
        (2_147_483_648, "Tue, 19 Jan 2038 03:14:08 GMT"),  // past the 32-bit time_t limit
        (4_107_542_400, "Mon, 01 Mar 2100 00:00:00 GMT"),  // 2100 is not a leap year
        (-1, "Wed, 31 Dec 1969 23:59:59 GMT"),
        (-2_203_891_200, "Thu, 01 Mar 1900 00:00:00 GMT"),
    ])
    func knownDates(seconds: Int, expected: String) {
        let text = HTTPDate.format(secondsSinceEpoch: seconds)
        #expect(text.string == expected)
        #expect(text.bytes == Array(expected.utf8))
        #expect(text.seconds == seconds)
        #expect(text.bytes.count == 29)
    }

    /// Every day from 1900 to 2200 against a calendar counted day by day, both ways (the one
    /// calendar of HTTP dates, PostgreSQL timestamps and date fields).
    @Test func civilDateMatchesACountedCalendar() {
        func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }
        func days(_ year: Int, _ month: Int) -> Int {
            [31, isLeap(year) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]
        }
        var daysSinceEpoch = -25_567  // 1900-01-01
        for year in 1900..<2200 {
            for month in 1...12 {
                for day in 1...days(year, month) {
                    let civil = CivilDate(daysSinceEpoch: Int64(daysSinceEpoch))
                    guard civil == CivilDate(year: Int64(year), month: Int64(month), day: Int64(day)),
                        civil.daysSinceEpoch == Int64(daysSinceEpoch), civil.isValid
                    else {
                        Issue.record("day \(daysSinceEpoch): expected \(year)-\(month)-\(day), got \(civil)")
                        return
                    }
                    daysSinceEpoch += 1
                }
            }
        }
    }

    @Test func weekdaysCycle() {
        let names = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
        for day in -30...30 {
            let text = HTTPDate.format(secondsSinceEpoch: day * 86_400 + 43_200).string
            #expect(text.hasPrefix(names[((day % 7) + 7) % 7] + ", "))
        }
    }
}
