import Glibc

/// A structured logger: one line per event, JSON or logfmt, written with a single `write(2)`.
///
/// Metadata keys are dotted (`request.id`, `user.id`). Nothing secret may be passed in: callers
/// log ids and codes, never tokens, passwords, hashes or request bodies.
public struct Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
        case trace, debug, info, notice, warning, error, critical

        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
            self = level
        }

        public var description: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }

        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// The line format.
    public enum Format: String, Sendable, CaseIterable {
        case json, logfmt
    }

    public let label: String
    public let level: Level
    public let format: Format
    public private(set) var metadata: [(String, String)]
    private let fd: Int32

    /// A logger writing to standard error.
    public init(label: String, level: Level = .info, format: Format = .json, fd: Int32 = 2) {
        self.label = label
        self.level = level
        self.format = format
        self.metadata = []
        self.fd = fd
    }

    /// A logger that writes nothing, for tests that do not look at logs.
    public static let silent = Logger(label: "silent", level: .critical, fd: -1)

    /// A copy with one more metadata pair on every line.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata.append((key, value))
        return copy
    }

    public func isEnabled(_ level: Level) -> Bool { fd >= 0 && level >= self.level }

    public func log(_ level: Level, _ message: @autoclosure () -> String, _ extra: KeyValuePairs<String, String> = [:]) {
        guard isEnabled(level) else { return }
        var bytes: [UInt8] = []
        render(level, message(), extra, into: &bytes)
        write(bytes)
    }

    /// Appends one formatted line to `bytes`, for callers that batch their writes (the event loops).
    public func render(_ level: Level, _ message: String, _ extra: KeyValuePairs<String, String>, into bytes: inout [UInt8]) {
        var line = LogLine(format: format, appendingTo: bytes)
        line.timestamp()
        line.field("level", level.description)
        line.field("logger", label)
        line.field("msg", message)
        for (key, value) in metadata { line.field(key, value) }
        for (key, value) in extra { line.field(key, value) }
        bytes = line.finish()
    }

    /// Writes already formatted lines with as few `write(2)` calls as the kernel allows.
    public func write(_ bytes: [UInt8]) {
        guard fd >= 0, !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    return
                }
                offset += written
            }
        }
    }

    public func trace(_ message: @autoclosure () -> String, _ extra: KeyValuePairs<String, String> = [:]) { log(.trace, message(), extra) }
    public func debug(_ message: @autoclosure () -> String, _ extra: KeyValuePairs<String, String> = [:]) { log(.debug, message(), extra) }
    public func info(_ message: @autoclosure () -> String, _ extra: KeyValuePairs<String, String> = [:]) { log(.info, message(), extra) }
    public func notice(_ message: @autoclosure () -> String, _ extra: KeyValuePairs<String, String> = [:]) { log(.notice, message(), extra) }
    public func warning(_ message: @autoclosure () -> String, _ extra: KeyValuePairs<String, String> = [:]) { log(.warning, message(), extra) }
    public func error(_ message: @autoclosure () -> String, _ extra: KeyValuePairs<String, String> = [:]) { log(.error, message(), extra) }
    public func critical(_ message: @autoclosure () -> String, _ extra: KeyValuePairs<String, String> = [:]) { log(.critical, message(), extra) }
}
