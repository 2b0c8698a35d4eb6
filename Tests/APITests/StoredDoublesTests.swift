@testable import Accounts
import JSON
import TestSupport
import Testing

/// The shortcut that keeps a stored double's text when it is already the shortest form agrees
/// with the full conversion it skips.
@Suite(.testThreads) struct StoredDoublesTests {
    @Test func shortcutAgreesWithTheConversion() throws {
        var literals = [
            "170.5", "70.0", "0.0", "-0.0", "0.1", "-2.5", "0.0001", "0.00012", "0.00001", "0.10", "1.50",
            "123456789012345.6", "12345678901234.56", "1234567890123456.0", "999999999999999.0",
            "0.123456789012345", "0.1234567890123456", "9007199254740993.0", "1e+16", "2.5e-3", "00.5", "1.", ".5",
        ]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let magnitude = Double.random(in: -8...17, using: &generator)
            let value = Double.random(in: 1..<10, using: &generator) * pow10(magnitude.rounded(.down))
            literals.append(JSONNumber(value)!.plainDecimalText)
            literals.append(String(format3(value)))
        }
        for literal in literals {
            guard let number = JSONNumber(literal: literal), !number.isInteger else { continue }
            let converted = number.doubleValue.flatMap { JSONNumber($0) }?.text
            if number.isShortestPlainDecimal {
                #expect(converted == literal, "\(literal) kept but converts to \(converted ?? "nil")")
            }
        }
        #expect(JSONNumber(literal: "170.5")!.isShortestPlainDecimal)
        #expect(JSONNumber(literal: "70.0")!.isShortestPlainDecimal)
        #expect(!JSONNumber(literal: "0.10")!.isShortestPlainDecimal)
        #expect(!JSONNumber(literal: "0.00001")!.isShortestPlainDecimal)
    }

    private func pow10(_ exponent: Double) -> Double {
        var result = 1.0
        if exponent >= 0 { for _ in 0..<Int(exponent) { result *= 10 } } else { for _ in 0..<Int(-exponent) { result /= 10 } }
        return result
    }

    /// A value rounded to three decimals, as a plain literal.
    private func format3(_ value: Double) -> String {
        let scaled = (value * 1000).rounded()
        guard abs(scaled) < 1e15 else { return "1.5" }
        let integer = Int64(scaled)
        let sign = integer < 0 ? "-" : ""
        let magnitude = integer.magnitude
        let fraction = String(magnitude % 1000)
        return sign + String(magnitude / 1000) + "." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
