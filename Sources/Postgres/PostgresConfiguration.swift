import CLibPQ
import Glibc

/// How to open a connection: the `DATABASE_URL` plus the settings applied on connect.
public struct PostgresConfiguration: Sendable {
    /// A `postgres://` URL or a libpq keyword string (`host=/tmp/x dbname=app`).
    public var connectionString: String
    /// Shown in `pg_stat_activity`.
    public var applicationName: String = "exosphere"
    /// Connect timeout (libpq counts whole seconds, at least 2).
    public var connectTimeout: Duration = .seconds(5)
    /// Server-side limit per statement; `nil` keeps the server's default.
    public var statementTimeout: Duration? = .seconds(30)
    /// Client-side limit on waiting for the server's answer to a statement, which also holds when
    /// the server cannot enforce its own (frozen, partitioned away); `nil` waits as long as it takes.
    public var responseTimeout: Duration?
    /// TCP keepalive: idle seconds before the first probe, seconds between probes, probes before giving up.
    public var keepalivesIdle: Int = 30
    public var keepalivesInterval: Int = 10
    public var keepalivesCount: Int = 3
    /// Prepared statements kept per connection; statements beyond it run unnamed.
    public var statementCacheCapacity: Int = 512
    /// The `options` already present in the connection string, kept ahead of ours.
    let userOptions: String?

    /// Validates `connectionString` with libpq's own parser.
    public init(connectionString: String) throws {
        var message: UnsafeMutablePointer<CChar>? = nil
        guard let parsed = PQconninfoParse(connectionString, &message) else {
            let reason = message.map { String(cString: $0) } ?? "unparsable connection string"
            if let message { PQfreemem(message) }
            throw PostgresError(code: .invalidConfiguration, context: reason)
        }
        defer { PQconninfoFree(parsed) }
        var options: String? = nil
        var option = parsed
        while let keyword = option.pointee.keyword {
            if strcmp(keyword, "options") == 0, let value = option.pointee.val { options = String(cString: value) }
            option += 1
        }
        self.connectionString = connectionString
        self.userOptions = options
    }

    /// Reads the connection string from an environment variable (call once at start-up).
    public static func fromEnvironment(_ variable: String = "DATABASE_URL") throws -> PostgresConfiguration {
        guard let value = getenv(variable) else {
            throw PostgresError(code: .invalidConfiguration, context: "\(variable) is not set")
        }
        return try PostgresConfiguration(connectionString: String(cString: value))
    }

    /// The server settings sent in the startup packet, so that no extra round trip is needed.
    var serverOptions: String {
        var options: [String] = []
        if let userOptions, !userOptions.isEmpty { options.append(userOptions) }
        if let statementTimeout {
            let milliseconds =
                statementTimeout.components.seconds * 1000
                + statementTimeout.components.attoseconds / 1_000_000_000_000_000
            options.append("-c statement_timeout=\(milliseconds)")
        }
        // The decoders rely on these output formats.
        options.append("-c TimeZone=UTC -c DateStyle=ISO,YMD -c bytea_output=hex -c extra_float_digits=1")
        return options.joined(separator: " ")
    }

    /// Keyword/value pairs for PQconnectdbParams: defaults first, then the expanded connection
    /// string (which may override them), then the settings the decoders depend on.
    var connectParameters: [(String, String)] {
        let timeout = max(2, Int(connectTimeout.components.seconds))
        return [
            ("application_name", applicationName),
            ("connect_timeout", String(timeout)),
            ("keepalives", "1"),
            ("keepalives_idle", String(keepalivesIdle)),
            ("keepalives_interval", String(keepalivesInterval)),
            ("keepalives_count", String(keepalivesCount)),
            ("dbname", connectionString),
            ("client_encoding", "UTF8"),
            ("options", serverOptions),
        ]
    }
}

extension PostgresConfiguration: CustomStringConvertible {
    /// Never prints the connection string: it may hold a password.
    public var description: String { "PostgresConfiguration(applicationName: \(applicationName))" }
}
