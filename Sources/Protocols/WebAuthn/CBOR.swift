/// A CBOR data item (RFC 8949) as WebAuthn carries them: an attestation object, a COSE key.
/// Definite lengths only (CTAP2's canonical form has no others), bounded nesting and sizes.
public indirect enum CBOR: Equatable, Sendable {
    case unsigned(UInt64)
    /// -1 - n.
    case negative(UInt64)
    case bytes([UInt8])
    case text(String)
    case array([CBOR])
    /// In the order they came; keys compared as items.
    case map([(key: CBOR, value: CBOR)])
    case tagged(UInt64, CBOR)
    case bool(Bool)
    case null
    case undefined
    case float(Double)

    public static func == (a: CBOR, b: CBOR) -> Bool {
        switch (a, b) {
        case (.unsigned(let x), .unsigned(let y)), (.negative(let x), .negative(let y)): x == y
        case (.bytes(let x), .bytes(let y)): x == y
        case (.text(let x), .text(let y)): x == y
        case (.array(let x), .array(let y)): x == y
        case (.map(let x), .map(let y)): x.count == y.count && zip(x, y).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        case (.tagged(let t, let x), .tagged(let u, let y)): t == u && x == y
        case (.bool(let x), .bool(let y)): x == y
        case (.null, .null), (.undefined, .undefined): true
        case (.float(let x), .float(let y)): x == y || (x.isNaN && y.isNaN)
        default: false
        }
    }

    /// The value of `key` in a map (nil for anything else).
    public subscript(key: CBOR) -> CBOR? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == key }?.value
    }

    public subscript(text key: String) -> CBOR? { self[.text(key)] }
    public subscript(int key: Int) -> CBOR? { self[key >= 0 ? .unsigned(UInt64(key)) : .negative(UInt64(-1 - key))] }

    public var bytesValue: [UInt8]? { if case .bytes(let bytes) = self { bytes } else { nil } }
    public var textValue: String? { if case .text(let text) = self { text } else { nil } }
    public var arrayValue: [CBOR]? { if case .array(let items) = self { items } else { nil } }

    /// An integer item as an Int, when it fits.
    public var intValue: Int? {
        switch self {
        case .unsigned(let value): value <= UInt64(Int.max) ? Int(value) : nil
        case .negative(let value): value <= UInt64(Int.max) ? -1 - Int(value) : nil
        default: nil
        }
    }

    public struct Malformed: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The one item `bytes` holds; trailing bytes are malformed.
    public static func decode(_ bytes: [UInt8]) throws(Malformed) -> CBOR {
        var reader = Reader(bytes: bytes[...])
        let item = try reader.item(depth: 0)
        guard reader.bytes.isEmpty else { throw Malformed(description: "\(reader.bytes.count) bytes after the item") }
        return item
    }

    /// The first item of `bytes` and how many bytes it took (a COSE key followed by extensions).
    public static func decodePrefix(_ bytes: ArraySlice<UInt8>) throws(Malformed) -> (CBOR, length: Int) {
        var reader = Reader(bytes: bytes)
        let item = try reader.item(depth: 0)
        return (item, bytes.count - reader.bytes.count)
    }

    private struct Reader {
        var bytes: ArraySlice<UInt8>
        static let maximumDepth = 16
        static let maximumItems = 4_096

        mutating func take(_ count: Int) throws(Malformed) -> ArraySlice<UInt8> {
            guard count >= 0, bytes.count >= count else { throw Malformed(description: "the data ends inside an item") }
            let taken = bytes.prefix(count)
            bytes = bytes.dropFirst(count)
            return taken
        }

        mutating func argument(_ additional: UInt8) throws(Malformed) -> UInt64 {
            switch additional {
            case 0..<24: return UInt64(additional)
            case 24...27:
                return try take(1 << Int(additional - 24)).reduce(0) { $0 << 8 | UInt64($1) }
            case 31: throw Malformed(description: "an indefinite length")
            default: throw Malformed(description: "a reserved additional information value \(additional)")
            }
        }

        mutating func length(_ additional: UInt8) throws(Malformed) -> Int {
            let value = try argument(additional)
            guard value <= UInt64(bytes.count) else { throw Malformed(description: "a length past the data's end") }
            return Int(value)
        }

        mutating func item(depth: Int) throws(Malformed) -> CBOR {
            guard depth <= Self.maximumDepth else { throw Malformed(description: "nested too deeply") }
            let initial = try take(1).first!
            let (major, additional) = (initial >> 5, initial & 0x1F)
            switch major {
            case 0: return .unsigned(try argument(additional))
            case 1: return .negative(try argument(additional))
            case 2: return .bytes(Array(try take(try length(additional))))
            case 3:
                let raw = try take(try length(additional))
                guard let text = String(validating: raw, as: UTF8.self) else { throw Malformed(description: "text that is not UTF-8") }
                return .text(text)
            case 4:
                let count = try length(additional)
                guard count <= Self.maximumItems else { throw Malformed(description: "too many items") }
                var items: [CBOR] = []
                for _ in 0..<count { items.append(try item(depth: depth + 1)) }
                return .array(items)
            case 5:
                let count = try argument(additional)
                guard count <= UInt64(min(bytes.count / 2, Self.maximumItems)) else { throw Malformed(description: "too many entries") }
                var entries: [(key: CBOR, value: CBOR)] = []
                for _ in 0..<count {
                    let key = try item(depth: depth + 1)
                    guard !entries.contains(where: { $0.key == key }) else { throw Malformed(description: "a map with a key twice") }
                    entries.append((key, try item(depth: depth + 1)))
                }
                return .map(entries)
            case 6: return .tagged(try argument(additional), try item(depth: depth + 1))
            default:
                switch additional {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 23: return .undefined
                case 25: return .float(Double(Float16Bits.decode(UInt16(try argument(additional)))))
                case 26: return .float(Double(Float(bitPattern: UInt32(try argument(additional)))))
                case 27: return .float(Double(bitPattern: try argument(additional)))
                default: throw Malformed(description: "an unsupported simple value \(additional)")
                }
            }
        }
    }
}

/// IEEE 754 half precision to Float, without relying on the platform's Float16.
enum Float16Bits {
    static func decode(_ bits: UInt16) -> Float {
        let sign: Float = bits & 0x8000 != 0 ? -1 : 1
        let exponent = Int((bits >> 10) & 0x1F)
        let fraction = Float(bits & 0x3FF)
        switch exponent {
        case 0: return sign * fraction * Float(sign: .plus, exponent: -24, significand: 1)
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default: return sign * (1 + fraction / 1024) * Float(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }
}
