import ExosphereClient
import Foundation
import TestSupport
import Testing

@Suite(.testThreads)
struct CalendarDateTests {
    @Test func parsesAndWritesExactlyYYYYMMDD() throws {
        let date = try #require(CalendarDate("1994-05-17"))
        #expect(date.year == 1994 && date.month == 5 && date.day == 17)
        #expect(date.description == "1994-05-17")
        #expect(CalendarDate(year: 7, month: 1, day: 2)?.description == "0007-01-02")
        for invalid in [
            "1994-5-17", "1994-05-17T00:00:00Z", "1994-13-01", "1994-02-29", "1900-02-29", "0000-01-01",
            "1994-04-31", "1994/05/17", "", "199a-05-17",
        ] {
            #expect(CalendarDate(invalid) == nil, "\(invalid)")
        }
        #expect(CalendarDate("2000-02-29") != nil)
        #expect(CalendarDate("2024-02-29") != nil)
        #expect(CalendarDate(year: 2023, month: 2, day: 29) == nil)
    }

    @Test func comparesByDay() throws {
        let days = ["1994-05-17", "1994-05-18", "1994-06-01", "1995-01-01"].compactMap(CalendarDate.init)
        #expect(days == days.shuffled().sorted())
        #expect(Set(days + days).count == 4)
    }

    /// 1994-05-17 in the app's calendar stays 1994-05-17 whatever time zone the device is in.
    @Test(arguments: ["Pacific/Kiritimati", "Pacific/Pago_Pago", "Asia/Jakarta", "America/St_Johns", "UTC"])
    func noTimeZoneShiftsTheDay(_ identifier: String) throws {
        let zone = try #require(TimeZone(identifier: identifier))
        let birthday = try #require(CalendarDate(year: 1994, month: 5, day: 17))
        let pickerDate = birthday.date(in: zone)  // midnight there
        #expect(CalendarDate(pickerDate, in: zone) == birthday)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        #expect(CalendarDate(pickerDate, calendar: calendar) == birthday)
        #expect(calendar.component(.day, from: pickerDate) == 17)
        // Late evening there is still the same day there, though another day in UTC.
        let evening = pickerDate.addingTimeInterval(23 * 3600 + 59 * 60)
        #expect(CalendarDate(evening, in: zone) == birthday)
    }

    @Test func theSameInstantIsADifferentDayInAnotherZone() throws {
        let instant = Date(timeIntervalSince1970: 769_132_800)  // 1994-05-17T00:00:00Z
        #expect(CalendarDate(instant, in: TimeZone(identifier: "UTC")!).description == "1994-05-17")
        #expect(CalendarDate(instant, in: TimeZone(identifier: "America/Los_Angeles")!).description == "1994-05-16")
        #expect(CalendarDate(instant, in: TimeZone(identifier: "Asia/Tokyo")!).description == "1994-05-17")
    }

    @Test func agreesWithFoundationsCalendarOverFourCenturies() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var day = calendar.date(from: DateComponents(year: 1800, month: 1, day: 1))!
        // Every 97th day from 1800 to 2200: all months, leap years and the 1900/2000/2100 rules.
        while calendar.component(.year, from: day) < 2200 {
            let parts = calendar.dateComponents([.year, .month, .day], from: day)
            let date = try #require(CalendarDate(year: parts.year!, month: parts.month!, day: parts.day!))
            #expect(date.date(in: calendar.timeZone) == day)
            #expect(CalendarDate(day, in: calendar.timeZone) == date)
            day = day.addingTimeInterval(97 * 86_400)
        }
    }

    @Test func codesAsAString() throws {
        struct Form: Codable, Equatable { var dateOfBirth: CalendarDate }
        let form = Form(dateOfBirth: CalendarDate(year: 1994, month: 5, day: 17)!)
        let json = try JSONEncoder().encode(form)
        #expect(String(decoding: json, as: UTF8.self) == #"{"dateOfBirth":"1994-05-17"}"#)
        #expect(try JSONDecoder().decode(Form.self, from: json) == form)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Form.self, from: Data(#"{"dateOfBirth":"17/05/1994"}"#.utf8)) }
    }
}
