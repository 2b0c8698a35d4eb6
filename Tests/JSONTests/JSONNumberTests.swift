import TestSupport
import Testing
@testable import JSON

@Suite(.testThreads) struct JSONNumberTests {
    private func number(_ literal: String) throws -> JSONNumber {
        try #require(try JSONParser.parse(literal).numberValue)
    }

    @Test func literalTextIsKept() throws {
        for literal in ["0", "-0", "1.50", "1E400", "1e-2", "-0.0", "12345678901234567890123"] {
            #expect(try number(literal).text == literal)
        }
    }

    @Test func integerLiteralsAreIntegers() throws {
        #expect(try number("2").isInteger)
        #expect(try number("-0").isInteger)
        #expect(try number("0").isInteger)
        #expect(try !number("2.0").isInteger)
        #expect(try !number("1e2").isInteger)
        #expect(try !number("1E+0").isInteger)
        #expect(try !number("0.0").isInteger)
    }

    @Test func int64Value() throws {
        #expect(try number("2").int64Value == 2)
        #expect(try number("-0").int64Value == 0)
        #expect(try number("-17").int64Value == -17)
        #expect(try number("9223372036854775807").int64Value == .max)
        #expect(try number("-9223372036854775808").int64Value == .min)
        #expect(try number("9223372036854775808").int64Value == nil)
        #expect(try number("-9223372036854775809").int64Value == nil)
        #expect(try number("99999999999999999999").int64Value == nil)
        #expect(try number("2.0").int64Value == nil)
        #expect(try number("1e2").int64Value == nil)
    }

    @Test func doubleValue() throws {
        #expect(try number("2.0").doubleValue == 2.0)
        #expect(try number("2").doubleValue == 2.0)
        #expect(try number("177.5").doubleValue == 177.5)
        #expect(try number("-1.5e10").doubleValue == -1.5e10)
        #expect(try number("1e-400").doubleValue == 0)
        #expect(try number("1E400").doubleValue == nil)
        #expect(try number("-1E400").doubleValue == nil)
        #expect(try number("0.1").doubleValue == 0.1)
        #expect(try number("1.7976931348623157e308").doubleValue == .greatestFiniteMagnitude)
        #expect(try number("5e-324").doubleValue == .leastNonzeroMagnitude)
        let negativeZero = try #require(try number("-0.0").doubleValue)
        #expect(negativeZero == 0 && negativeZero.sign == .minus)
    }

    @Test func integerConstructors() {
        #expect(JSONNumber(42).text == "42")
        #expect(JSONNumber(-7).isInteger)
        #expect(JSONNumber(Int64.min).text == "-9223372036854775808")
        #expect(JSONNumber(Int64.max).int64Value == .max)
    }

    @Test(arguments: [
        (2.0, "2.0"), (0.1, "0.1"), (-0.0, "-0.0"), (177.5, "177.5"), (1e300, "1e+300"),
        (1e16, "1e+16"), (Double.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123456789.125, "123456789.125"), (0.30000000000000004, "0.30000000000000004"),
    ])
    func doubleConstructorIsShortestRoundTrip(value: Double, text: String) throws {
        let number = try #require(JSONNumber(value))
        #expect(number.text == text)
        #expect(!number.isInteger)
        let reparsed = try #require(try JSONParser.parse(number.text).numberValue)
        #expect(!reparsed.isInteger)
        #expect(reparsed.doubleValue?.bitPattern == value.bitPattern)
    }

    @Test func doubleConstructorRefusesNonFinite() {
        #expect(JSONNumber(Double.nan) == nil)
        #expect(JSONNumber(Double.infinity) == nil)
        #expect(JSONNumber(-Double.infinity) == nil)
    }

    @Test func manyDoublesRoundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let value = Double(bitPattern: generator.next())
            guard value.isFinite else { continue }
            let number = try #require(JSONNumber(value))
            let reparsed = try #require(try JSONParser.parse(number.text).numberValue)
            #expect(!reparsed.isInteger)
            #expect(reparsed.doubleValue?.bitPattern == value.bitPattern)
        }
    }

    @Test func literalValidation() {
        #expect(JSONNumber(literal: "-1.5e+3")?.isInteger == false)
        #expect(JSONNumber(literal: "12")?.isInteger == true)
        for bad in ["", "01", "+1", "1.", ".1", "1e", " 1", "1 ", "NaN", "0x10", "--1", "1e5.0"] {
            #expect(JSONNumber(literal: bad) == nil, "\(bad)")
        }
    }

    @Test func equalityKeepsIntegersApartFromDoubles() throws {
        #expect(try number("2") != number("2.0"))
        #expect(try number("2.0") == number("2.00"))
        #expect(try number("1e2") == number("100.0"))
        #expect(try number("-0") == number("0"))
        #expect(try number("0.0") == number("-0.0"))
        #expect(try number("1E400") == number("1E400"))
        #expect(try number("1E400") != number("2E400"))
        #expect(try number("99999999999999999999") != number("99999999999999999998"))
        #expect(try Set([number("1e2"), number("100.0"), number("100")]).count == 2)
    }

    @Test func description() {
        #expect(JSONNumber(12).description == "12")
    }
}
