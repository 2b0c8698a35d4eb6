import CLibPQ
import Glibc

/// How to open a connection: the `DATABASE_URL` plus the settings applied on connect.
public struct PostgresConfiguration: Sendable {
    /// What a connection pooler (pgbouncer) in front of PostgreSQL lets a connection keep.
    ///
    /// A pooler refuses the `options` startup parameter (pgbouncer before 1.20 ends the
    /// connection: "unsupported startup parameter: options"), so behind one the time zone and
    /// date style go as the startup parameters it tracks (`TimeZone`, `DateStyle`, which libpq
    /// sends from `PGTZ` and `PGDATESTYLE`), and the other settings as follows.
    public enum Pooler: String, Sendable, CaseIterable {
        /// Direct connections: every setting in the startup packet, statements prepared once.
        case none
        /// A server connection per client connection (pgbouncer `pool_mode = session`): the
        /// settings are `SET` once after connecting; statements are prepared as without a pooler.
        case session
        /// A server connection per transaction (`pool_mode = transaction`): nothing lasts beyond
        /// a transaction, so every statement runs as the unnamed statement (parsed, bound and run
        /// in one message sequence), and `statement_timeout` must come from the server's side
        /// (`ALTER ROLE … SET statement_timeout`, or pgbouncer's `connect_query`).
        case transaction
    }

    /// A `postgres://` URL or a libpq keyword string (`host=/tmp/x dbname=app`).
    public var connectionString: String
    /// Shown in `pg_stat_activity`.
    public var applicationName: String = "exosphere"
    /// Connect timeout, kept by the connection itself (exactly: libpq's `connect_timeout`, which
    /// counts whole seconds and at least 2, applies only to blocking connects; it is sent anyway).
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
    /// The connection pooler between this process and PostgreSQL, if any.
    public var pooler: Pooler = .none
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

    /// `statement_timeout` in milliseconds, as PostgreSQL takes it.
    var statementTimeoutMilliseconds: Int64? {
        statementTimeout.map { $0.components.seconds * 1000 + $0.components.attoseconds / 1_000_000_000_000_000 }
    }

    /// The server settings sent in the startup packet, so that no extra round trip is needed.
    var serverOptions: String {
        var options: [String] = []
        if let userOptions, !userOptions.isEmpty { options.append(userOptions) }
        if let milliseconds = statementTimeoutMilliseconds { options.append("-c statement_timeout=\(milliseconds)") }
        // The decoders rely on these output formats.
        options.append("-c TimeZone=UTC -c DateStyle=ISO,YMD -c bytea_output=hex -c extra_float_digits=1")
        return options.joined(separator: " ")
    }

    /// What a connection sets with `SET` once it is open: behind a pooler in session mode, what
    /// the startup packet cannot carry (see `Pooler`).
    var settingsAfterConnecting: String? {
        guard pooler == .session else { return nil }
        // TimeZone and DateStyle went in the startup packet (`pooledStartupEnvironment`).
        var settings = ["SET bytea_output = hex", "SET extra_float_digits = 1"]
        if let milliseconds = statementTimeoutMilliseconds { settings.append("SET statement_timeout = \(milliseconds)") }
        return settings.joined(separator: "; ")
    }

    /// Keyword/value pairs for PQconnectdbParams: defaults first, then the expanded connection
    /// string (which may override them), then the settings the decoders depend on.
    var connectParameters: [(String, String)] {
        let timeout = max(2, Int(connectTimeout.components.seconds))
        var parameters = [
            ("application_name", applicationName),
            ("connect_timeout", String(timeout)),
            ("keepalives", "1"),
            ("keepalives_idle", String(keepalivesIdle)),
            ("keepalives_interval", String(keepalivesInterval)),
            ("keepalives_count", String(keepalivesCount)),
            ("dbname", connectionString),
            ("client_encoding", "UTF8"),
        ]
        if pooler == .none { parameters.append(("options", serverOptions)) }
        return parameters
    }

    /// Behind a pooler: libpq sends `PGTZ` and `PGDATESTYLE` as the startup parameters `timezone`
    /// and `datestyle`, which poolers pass on and restore on every server connection they lend.
    /// Set once, before the first connection behind a pooler.
    static let pooledStartupEnvironment: Void = {
        setenv("PGTZ", "UTC", 1)
        setenv("PGDATESTYLE", "ISO, YMD", 1)
    }()

    /// Refuses what cannot work behind the pooler.
    func checkPooler() throws {
        guard pooler != .none, let userOptions, !userOptions.isEmpty else { return }
        throw PostgresError(
            code: .invalidConfiguration,
            context:
                "the connection string sets options (\(userOptions)), which a connection pooler refuses; set them on the server instead (ALTER ROLE … SET)"
        )
    }
}

extension PostgresConfiguration: CustomStringConvertible {
    /// Never prints the connection string: it may hold a password.
    public var description: String { "PostgresConfiguration(applicationName: \(applicationName))" }
}
