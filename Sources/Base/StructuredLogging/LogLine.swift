import Glibc
import JSON

/// Builds one log line in JSON or logfmt, escaping every value.
struct LogLine {
    let format: Logger.Format
    private var writer: JSONWriter
    private var first = true

    init(format: Logger.Format, appendingTo existing: [UInt8] = []) {
        self.format = format
        writer = JSONWriter(appendingTo: existing)
        if format == .json { writer.beginObject() }
    }

    /// The `ts` field: RFC 3339 UTC with milliseconds.
    mutating func timestamp() {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        var seconds = ts.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let text = String(unsafeUninitializedCapacity: 24) { buffer in
            func put(_ value: Int, at offset: Int, digits: Int) {
                var rest = value
                for i in stride(from: offset + digits - 1, through: offset, by: -1) {
                    buffer[i] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put(Int(parts.tm_year) + 1900, at: 0, digits: 4)
            buffer[4] = UInt8(ascii: "-")
            put(Int(parts.tm_mon) + 1, at: 5, digits: 2)
            buffer[7] = UInt8(ascii: "-")
            put(Int(parts.tm_mday), at: 8, digits: 2)
            buffer[10] = UInt8(ascii: "T")
            put(Int(parts.tm_hour), at: 11, digits: 2)
            buffer[13] = UInt8(ascii: ":")
            put(Int(parts.tm_min), at: 14, digits: 2)
            buffer[16] = UInt8(ascii: ":")
            put(Int(parts.tm_sec), at: 17, digits: 2)
            buffer[19] = UInt8(ascii: ".")
            put(ts.tv_nsec / 1_000_000, at: 20, digits: 3)
            buffer[23] = UInt8(ascii: "Z")
            return 24
        }
        field("ts", text)
    }

    mutating func field(_ key: String, _ value: String) {
        switch format {
        case .json:
            writer.key(key)
            writer.string(value)
        case .logfmt:
            if !first { writer.bytes.append(UInt8(ascii: " ")) }
            var key = key
            key.withUTF8 { writer.bytes.append(contentsOf: $0) }
            writer.bytes.append(UInt8(ascii: "="))
            appendLogfmtValue(value)
        }
        first = false
    }

    mutating func finish() -> [UInt8] {
        if format == .json { writer.endObject() }
        writer.bytes.append(UInt8(ascii: "\n"))
        return writer.bytes
    }

    private mutating func appendLogfmtValue(_ string: String) {
        var string = string
        let plain = string.withUTF8 { utf8 in
            !utf8.isEmpty && !utf8.contains { $0 <= 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") || $0 == 0x7F }
        }
        guard plain else {
            // A quoted, JSON-escaped value is valid logfmt.
            var quoted = JSONWriter(appendingTo: writer.bytes)
            writer.bytes = []  // keep one owner of the buffer, so appending does not copy it
            quoted.string(string)
            writer = JSONWriter(appendingTo: quoted.bytes)
            return
        }
        string.withUTF8 { writer.bytes.append(contentsOf: $0) }
    }
}
