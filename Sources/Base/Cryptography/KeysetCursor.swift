import FoundationEssentials

/// A position in a keyset-paged list (a user's images, their activity): the (instant, id) of the
/// last item of a page.
///
/// Sent to clients as 32 base64url characters (8 bytes of microseconds, 16 of id): opaque to
/// them, exact for the database (no floating-point timestamps), and checked when it comes back.
public struct KeysetCursor: Sendable, Hashable {
    /// The item's instant, in microseconds since 1970 (PostgreSQL's precision).
    public let microseconds: Int64
    public let id: UUID

    public init(microseconds: Int64, id: UUID) {
        self.microseconds = microseconds
        self.id = id
    }

    /// Parses a cursor a client sent back; nil if it is not one of ours.
    public init?(text: String) {
        guard text.utf8.count == 32, let bytes = Base64URL.decode(text), bytes.count == 24 else { return nil }
        var micros: UInt64 = 0
        for byte in bytes[0..<8] { micros = micros << 8 | UInt64(byte) }
        // Only instants PostgreSQL can hold and this server can have written: 1970 to 9999.
        guard micros <= KeysetCursor.latestMicroseconds else { return nil }
        let id = bytes[8..<24]
        let uuid = id.withUnsafeBytes { $0.loadUnaligned(as: uuid_t.self) }
        self.init(microseconds: Int64(micros), id: UUID(uuid: uuid))
    }

    /// 9999-12-31T23:59:59.999999Z in microseconds since the epoch.
    static let latestMicroseconds: UInt64 = 253_402_300_799_999_999

    public var text: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        let micros = UInt64(bitPattern: microseconds)
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: micros >> UInt64(shift))) }
        withUnsafeBytes(of: id.uuid) { bytes.append(contentsOf: $0) }
        return Base64URL.encode(bytes)
    }
}
