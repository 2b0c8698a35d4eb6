import HTTPServer
import Logging

/// Everything `exosphere serve` needs, read once at start-up from flags, then the environment, then defaults.
public struct Configuration: Sendable {
    public var server = ServerConfiguration()
    public var logLevel: Logger.Level = .info
    public var logFormat: Logger.Format = .json

    public init() {}

    /// One setting: its flag, its environment variable, its help line and how it applies.
    struct Option: Sendable {
        let flag: String
        let environment: String
        let placeholder: String
        let help: String
        let defaultValue: @Sendable (Configuration) -> String
        let apply: @Sendable (inout Configuration, String) throws(ConfigurationError) -> Void
    }

    static let options: [Option] = [
        Option(flag: "--host", environment: "HOST", placeholder: "ADDRESS", help: "address to listen on",
               defaultValue: { $0.server.host }) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--host/HOST must not be empty") }
            config.server.host = value
        },
        Option(flag: "--port", environment: "PORT", placeholder: "PORT", help: "TCP port to listen on (0 picks a free one)",
               defaultValue: { String($0.server.port) }) { config, value throws(ConfigurationError) in
            config.server.port = try integer(value, "--port/PORT", 0...65535)
        },
        Option(flag: "--event-loops", environment: "EXOSPHERE_EVENT_LOOPS", placeholder: "N", help: "event-loop threads",
               defaultValue: { String($0.server.eventLoops) }) { config, value throws(ConfigurationError) in
            config.server.eventLoops = try integer(value, "--event-loops", 1...256)
        },
        Option(flag: "--worker-threads", environment: "EXOSPHERE_WORKER_THREADS", placeholder: "N",
               help: "threads that run handlers which block", defaultValue: { String($0.server.workerThreads) }) { config, value throws(ConfigurationError) in
            config.server.workerThreads = try integer(value, "--worker-threads", 1...1024)
        },
        Option(flag: "--max-connections", environment: "EXOSPHERE_MAX_CONNECTIONS", placeholder: "N",
               help: "open connections beyond which new ones get 503", defaultValue: { String($0.server.maxConnections) }) { config, value throws(ConfigurationError) in
            config.server.maxConnections = try integer(value, "--max-connections", 1...1_000_000)
        },
        Option(flag: "--max-body-bytes", environment: "EXOSPHERE_MAX_BODY_BYTES", placeholder: "BYTES",
               help: "default request body limit", defaultValue: { String($0.server.limits.maxBodyBytes) }) { config, value throws(ConfigurationError) in
            config.server.limits.maxBodyBytes = try integer(value, "--max-body-bytes", 0...(1 << 30))
        },
        Option(flag: "--header-timeout", environment: "EXOSPHERE_HEADER_TIMEOUT", placeholder: "SECONDS",
               help: "time allowed for a request head", defaultValue: { seconds($0.server.headerTimeout) }) { config, value throws(ConfigurationError) in
            config.server.headerTimeout = .seconds(try integer(value, "--header-timeout", 1...3600))
        },
        Option(flag: "--idle-timeout", environment: "EXOSPHERE_IDLE_TIMEOUT", placeholder: "SECONDS",
               help: "keep-alive idle timeout", defaultValue: { seconds($0.server.idleTimeout) }) { config, value throws(ConfigurationError) in
            config.server.idleTimeout = .seconds(try integer(value, "--idle-timeout", 1...3600))
        },
        Option(flag: "--drain-timeout", environment: "EXOSPHERE_DRAIN_TIMEOUT", placeholder: "SECONDS",
               help: "how long shutdown waits for in-flight requests", defaultValue: { seconds($0.server.drainTimeout) }) { config, value throws(ConfigurationError) in
            config.server.drainTimeout = .seconds(try integer(value, "--drain-timeout", 0...3600))
        },
        Option(flag: "--log-level", environment: "LOG_LEVEL", placeholder: "LEVEL",
               help: "trace, debug, info, notice, warning, error or critical", defaultValue: { $0.logLevel.description }) { config, value throws(ConfigurationError) in
            guard let level = Logger.Level(name: value) else { throw ConfigurationError("--log-level/LOG_LEVEL: unknown level '\(shown(value))'") }
            config.logLevel = level
        },
        Option(flag: "--log-format", environment: "LOG_FORMAT", placeholder: "FORMAT", help: "json or logfmt",
               defaultValue: { $0.logFormat.rawValue }) { config, value throws(ConfigurationError) in
            guard let format = Logger.Format(rawValue: value) else { throw ConfigurationError("--log-format/LOG_FORMAT: expected json or logfmt, got '\(shown(value))'") }
            config.logFormat = format
        },
    ]

    /// Reads flags (`--port 8080` or `--port=8080`) over environment variables over defaults.
    public static func parse(arguments: [String], environment: [String: String]) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        for option in options {
            if let value = environment[option.environment] { try option.apply(&configuration, value) }
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let (flag, inlineValue) = splitFlag(argument)
            guard let option = options.first(where: { $0.flag == flag }) else {
                throw ConfigurationError("unknown option '\(shown(argument))' (see exosphere serve --help)")
            }
            let value: String
            if let inlineValue {
                value = inlineValue
            } else {
                index += 1
                guard index < arguments.count else { throw ConfigurationError("\(flag) needs a value") }
                value = arguments[index]
            }
            try option.apply(&configuration, value)
            index += 1
        }
        return configuration
    }

    /// The `serve --help` text: every option with its variable and default.
    public static var help: String {
        let defaults = Configuration()
        var lines = ["Usage: exosphere serve [options]", "", "Options (flag, environment variable, default):"]
        for option in options {
            let left = "  \(option.flag) \(option.placeholder)"
            lines.append(left.padding(to: 34) + "\(option.help) [\(option.environment), default: \(option.defaultValue(defaults))]")
        }
        return lines.joined(separator: "\n")
    }

    private static func splitFlag(_ argument: String) -> (String, String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }

    private static func integer(_ value: String, _ name: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let number = Int(value), range.contains(number) else {
            throw ConfigurationError("\(name): expected an integer in \(range.lowerBound)...\(range.upperBound), got '\(shown(value))'")
        }
        return number
    }

    private static func seconds(_ duration: Duration) -> String { String(duration.components.seconds) }

    /// A user's value as it appears in an error: control characters escaped, so the message stays one line.
    private static func shown(_ value: String) -> String {
        var text = ""
        for scalar in value.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F { text += scalar.escaped(asASCII: true) } else { text.unicodeScalars.append(scalar) }
        }
        return text
    }
}

/// A configuration problem, reported as one line before exiting non-zero.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

extension String {
    fileprivate func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
