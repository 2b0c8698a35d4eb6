import CivilTime

/// The instant a request is signed at, to the second, in UTC: `20130524T000000Z` in
/// `X-Amz-Date`, `20130524` in the credential's scope.
public struct AMZDate: Sendable, Equatable {
    /// Seconds since 1970-01-01T00:00:00Z.
    public var secondsSinceEpoch: Int64

    public init(secondsSinceEpoch: Int64) { self.secondsSinceEpoch = secondsSinceEpoch }

    /// `YYYYMMDD'T'HHMMSS'Z'`.
    public var timestamp: String {
        let seconds = ((secondsSinceEpoch % 86_400) + 86_400) % 86_400
        return dateStamp + "T" + Self.twoDigits(seconds / 3600) + Self.twoDigits(seconds / 60 % 60) + Self.twoDigits(seconds % 60) + "Z"
    }

    /// `YYYYMMDD`, the date of the credential's scope.
    public var dateStamp: String {
        let days = secondsSinceEpoch >= 0 ? secondsSinceEpoch / 86_400 : (secondsSinceEpoch - 86_399) / 86_400
        let date = CivilDate(daysSinceEpoch: days)
        let year = String(date.year)
        return String(repeating: "0", count: max(0, 4 - year.count)) + year + Self.twoDigits(date.month) + Self.twoDigits(date.day)
    }

    private static func twoDigits(_ value: Int64) -> String { value < 10 ? "0\(value)" : String(value) }
}
