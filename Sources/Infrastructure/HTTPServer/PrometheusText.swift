/// Writes metrics in the Prometheus text exposition format, version 0.0.4, straight into bytes.
///
/// ```swift
/// var text = PrometheusText()
/// text.family("jobs_total", type: .counter, help: "Jobs run.")
/// text.sample("jobs_total", ["queue": "mail"], 3)
/// // text.bytes == Array("# HELP jobs_total Jobs run.\n# TYPE jobs_total counter\njobs_total{queue=\"mail\"} 3\n".utf8)
/// ```
///
/// The format wants every sample of a family right after its header, and each family once; the
/// writer trusts its caller for that, as it trusts names to be valid (checked in debug builds only).
/// It knows nothing of what is measured, so it lives beside the server rather than the application.
public struct PrometheusText: Sendable {
    /// The `Content-Type` of a scrape in this format.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// The `# TYPE` of a family.
    public struct MetricType: Sendable, Hashable {
        public let name: String
        public static let counter = MetricType(name: "counter")
        public static let gauge = MetricType(name: "gauge")
        public static let histogram = MetricType(name: "histogram")
        public static let untyped = MetricType(name: "untyped")
    }

    /// The output so far.
    public private(set) var bytes: [UInt8]

    public init(capacity: Int = 4096) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Writes `# HELP` and `# TYPE`; the family's samples follow.
    public mutating func family(_ name: String, type: MetricType, help: String) {
        assert(PrometheusText.isValidMetricName(name), "invalid metric name \(name)")
        append("# HELP ")
        append(name)
        append(" ")
        append(PrometheusText.escapeHelp(help))
        append("\n# TYPE ")
        append(name)
        append(" ")
        append(type.name)
        append("\n")
    }

    /// A family of one unlabelled sample: header and value.
    public mutating func metric(_ name: String, type: MetricType, help: String, _ value: some BinaryInteger) {
        family(name, type: type, help: help)
        sample(name, value)
    }

    /// A family of one unlabelled sample with a double value.
    public mutating func metric(_ name: String, type: MetricType, help: String, _ value: Double) {
        family(name, type: type, help: help)
        sample(name, value)
    }

    /// One sample with an integer value, written without a fraction.
    public mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: some BinaryInteger) {
        writeSample(name, Array(labels), String(value))
    }

    /// One sample with a double value, written so that it parses back to the same `Double`.
    public mutating func sample(_ name: String, _ labels: KeyValuePairs<String, String>, _ value: Double) {
        writeSample(name, Array(labels), PrometheusText.format(value))
    }

    /// One sample without labels, with an integer value.
    public mutating func sample(_ name: String, _ value: some BinaryInteger) {
        writeSample(name, [], String(value))
    }

    /// One sample without labels, with a double value.
    public mutating func sample(_ name: String, _ value: Double) {
        writeSample(name, [], PrometheusText.format(value))
    }

    /// One histogram series: a cumulative `_bucket` per bound, then `+Inf` (the count), `_sum` and
    /// `_count`. `cumulativeCounts[i]` is the number of observations at most `bounds[i]`.
    public mutating func histogram(
        _ name: String, _ labels: KeyValuePairs<String, String> = [:], bounds: [Double],
        cumulativeCounts: [Int], count: Int, sum: Double
    ) {
        precondition(bounds.count == cumulativeCounts.count, "one cumulative count per bound")
        let labels = Array(labels)
        for (bound, cumulative) in zip(bounds, cumulativeCounts) {
            writeSample(name + "_bucket", labels + [("le", PrometheusText.format(bound))], String(cumulative))
        }
        writeSample(name + "_bucket", labels + [("le", "+Inf")], String(count))
        writeSample(name + "_sum", labels, PrometheusText.format(sum))
        writeSample(name + "_count", labels, String(count))
    }

    /// The shortest text that parses back to `value` (Swift's `description`, as Go's `ParseFloat`
    /// and Python's `float` read it), with the format's spellings of infinities and NaN.
    public static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Inf" : "+Inf" }
        return value.description
    }

    /// A label value with backslash, double quote and line feed escaped, the three the format names.
    public static func escapeLabelValue(_ value: String) -> String {
        escape(value, quote: true)
    }

    /// `# HELP` text with backslash and line feed escaped (a quote needs no escape there).
    public static func escapeHelp(_ text: String) -> String {
        escape(text, quote: false)
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    static func isValidMetricName(_ name: String) -> Bool {
        isValidName(name, colons: true)
    }

    /// `[a-zA-Z_][a-zA-Z0-9_]*`.
    static func isValidLabelName(_ name: String) -> Bool {
        isValidName(name, colons: false)
    }

    private mutating func writeSample(_ name: String, _ labels: [(String, String)], _ value: String) {
        assert(PrometheusText.isValidMetricName(name), "invalid metric name \(name)")
        append(name)
        if !labels.isEmpty {
            append("{")
            for (index, (label, value)) in labels.enumerated() {
                assert(PrometheusText.isValidLabelName(label), "invalid label name \(label)")
                if index > 0 { append(",") }
                append(label)
                append("=\"")
                append(PrometheusText.escapeLabelValue(value))
                append("\"")
            }
            append("}")
        }
        append(" ")
        append(value)
        append("\n")
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private static func escape(_ text: String, quote: Bool) -> String {
        // Most values need nothing; only build a new string for the ones that do.
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\n") || (quote && $0 == UInt8(ascii: "\"")) }) else {
            return text
        }
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count + 8)
        for character in text.unicodeScalars {
            switch character {
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\"" where quote: escaped += "\\\""
            default: escaped.unicodeScalars.append(character)
            }
        }
        return escaped
    }

    private static func isValidName(_ name: String, colons: Bool) -> Bool {
        var first = true
        for byte in name.utf8 {
            let letter = (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
            let digit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
            guard letter || byte == UInt8(ascii: "_") || (colons && byte == UInt8(ascii: ":")) || (digit && !first) else { return false }
            first = false
        }
        return !first
    }
}
