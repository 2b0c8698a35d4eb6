import Foundation

/// Typed access to the custom fields, in Mesosfer's style (`date(forKey:)`, `set(_:forKey:)`) and
/// Swift's (`user["height"] = 177.5`, `decodeData(as:)`). Changes stay local until `save`.
extension User {
    /// The field's value, or nil when the user has none; assigning nil removes the field.
    public subscript(key: String) -> FieldValue? {
        get { data[key] }
        set { data[key] = newValue }
    }

    /// A `string` field (also the raw text of a `date` or `datetime` field).
    public func string(forKey key: String) -> String? { data[key]?.stringValue }

    /// An `integer` field.
    public func integer(forKey key: String) -> Int? { data[key]?.integerValue }

    /// A `double` field (one written as an integer literal, `78`, reads as `78.0`).
    public func double(forKey key: String) -> Double? { data[key]?.doubleValue }

    /// A `boolean` field.
    public func bool(forKey key: String) -> Bool? { data[key]?.boolValue }

    /// A `boolean` field: Mesosfer's name for `bool(forKey:)`.
    public func boolean(forKey key: String) -> Bool? { bool(forKey: key) }

    /// A `date` field: a calendar date that no time zone shifts.
    public func date(forKey key: String) -> CalendarDate? { data[key]?.calendarDateValue }

    /// A `datetime` field: an instant.
    public func dateTime(forKey key: String) -> Date? { data[key]?.dateValue }

    /// Sets a `string` field.
    public mutating func set(_ value: String, forKey key: String) { data[key] = .string(value) }

    /// Sets an `integer` field (or a `double` one: an integer literal is accepted for it).
    public mutating func set(_ value: Int, forKey key: String) { data[key] = .integer(value) }

    /// Sets a `double` field; sent with a fraction (`180.0`), so a new field becomes a `double`.
    public mutating func set(_ value: Double, forKey key: String) { data[key] = .double(value) }

    /// Sets a `boolean` field.
    public mutating func set(_ value: Bool, forKey key: String) { data[key] = .bool(value) }

    /// Sets a `date` field, sent as `YYYY-MM-DD`.
    public mutating func set(_ value: CalendarDate, forKey key: String) { data[key] = .string(value.description) }

    /// Sets a `datetime` field, sent as RFC 3339 in UTC with milliseconds.
    public mutating func set(_ value: Date, forKey key: String) { data[key] = .string(Timestamp.format(value)) }

    /// Removes a field (sent as `null`, which deletes it on the server).
    public mutating func remove(forKey key: String) { data[key] = nil }

    /// Decodes the custom fields into an app's own type, as `JSONDecoder` would decode the
    /// `data` object: a `CalendarDate` property reads a `date` field, a `Date` property a
    /// `datetime` one, an optional property a field the user may not have.
    ///
    /// ```swift
    /// struct Profile: Decodable { var dateOfBirth: CalendarDate?; var height: Double?; var isMarried: Bool? }
    /// let profile = try user.decodeData(as: Profile.self)
    /// ```
    ///
    /// - Throws: `ExosphereError` with code `decoding_failed` carrying the `DecodingError`'s message.
    public func decodeData<T: Decodable>(as type: T.Type = T.self) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = Timestamp.parse(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "\(text) is not an RFC 3339 date-time")
            }
            return date
        }
        do {
            return try decoder.decode(T.self, from: try JSONValue.object(data.mapValues(\.json)).serialized())
        } catch {
            throw ExosphereError(code: .decodingFailed, detail: "The custom fields do not decode as \(T.self): \(error)")
        }
    }
}
