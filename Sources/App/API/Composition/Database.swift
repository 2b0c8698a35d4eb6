import StructuredLogging
import Migrations
import Postgres
import PostgresCluster

/// The database as a service: a managed local cluster when no URL is given, the pool, and the
/// migrations; started before the HTTP server and stopped after it.
public final class Database: Sendable {
    /// The requests' connections.
    public let pool: PostgresPool
    /// One connection for background work (the mail sender, password reset requests), so that
    /// it never takes a request's connection, nor waits for one in a storm.
    public let backgroundPool: PostgresPool
    public let migrator: Migrator
    /// The cluster this process runs, if it runs one.
    let cluster: LocalCluster?
    private let logger: Logger

    private init(pool: PostgresPool, backgroundPool: PostgresPool, migrator: Migrator, cluster: LocalCluster?, logger: Logger) {
        self.pool = pool
        self.backgroundPool = backgroundPool
        self.migrator = migrator
        self.cluster = cluster
        self.logger = logger
    }

    /// What to do when there is no URL and another process (a running `exosphere serve`) already
    /// runs the managed cluster of the data directory.
    public enum RunningCluster: Sendable {
        /// Refuse, naming the running server's connection string: `serve` owns the cluster it
        /// starts and stops it when it stops, which would pull it from under the other process.
        case refuse
        /// Connect to it: the commands beside `serve` (`admin`, `keys`, `migrate`, `images
        /// migrate`), which start the cluster themselves only when none runs.
        case join
    }

    /// Connects (starting the managed cluster first when there is no URL) and applies pending migrations.
    public static func start(
        _ configuration: Configuration, logger: Logger, migrate: Bool = true, runningCluster: RunningCluster = .refuse
    ) throws -> Database {
        let migrator =
            try configuration.migrationsDirectory.map { try Migrator(directory: $0) }
            ?? Migrator(files: EmbeddedMigrations.files)
        var cluster: LocalCluster?
        var postgres: PostgresConfiguration
        if let url = configuration.databaseURL {
            postgres = try PostgresConfiguration(connectionString: url)
        } else if let running = try LocalCluster.running(dataDirectory: configuration.dataDirectory) {
            guard runningCluster == .join else {
                throw PostgresError(
                    code: .clusterFailed,
                    context:
                        "the managed PostgreSQL of \(configuration.dataDirectory) already runs (pid \(running.pid)), held by another process, likely another exosphere serve; stop it, or run this one with --database-url \"\(running.connectionString)\""
                )
            }
            logger.notice(
                "using the managed PostgreSQL another process runs",
                ["postgres.data_dir": configuration.dataDirectory, "postgres.pid": String(running.pid)])
            postgres = try PostgresConfiguration(connectionString: running.connectionString)
        } else {
            logger.notice("starting managed PostgreSQL", ["postgres.data_dir": configuration.dataDirectory])
            let started = try LocalCluster.start(dataDirectory: configuration.dataDirectory)
            // Trust authentication on a private unix socket: the string holds no secret.
            logger.notice("managed PostgreSQL started", ["postgres.connection": started.connectionString])
            cluster = started
            postgres = try started.configuration()
        }
        do {
            postgres.applicationName = "exosphere"
            postgres.responseTimeout = configuration.databaseResponseTimeout
            postgres.pooler = configuration.databasePooler
            let pool = PostgresPool(
                configuration: postgres, size: configuration.databasePoolSize,
                acquireTimeout: configuration.databaseAcquireTimeout)
            var background = postgres
            background.applicationName = "exosphere-background"
            let database = Database(
                pool: pool, backgroundPool: PostgresPool(configuration: background, size: 1, acquireTimeout: configuration.databaseAcquireTimeout),
                migrator: migrator, cluster: cluster, logger: logger)
            if postgres.pooler != .none { try Database.checkPooler(pool, postgres.pooler, logger: logger) }
            if migrate {
                let applied = try migrator.migrate(on: pool)
                logger.notice(
                    "migrations applied",
                    [
                        "migrations.applied": String(applied.count),
                        "migrations.total": String(migrator.migrations.count),
                    ])
            }
            return database
        } catch let error as PostgresError where postgres.pooler == .none && Database.isRefusedStartupOptions(error) {
            cluster?.stop()
            throw PostgresError(
                code: .invalidConfiguration,
                context:
                    "the server refused the startup parameter options (\(error.serverMessage ?? error.context ?? "unsupported startup parameter")): a connection pooler such as pgbouncer is in front of PostgreSQL; declare it with --db-pooler session or --db-pooler transaction (EXOSPHERE_DB_POOLER), as its pool_mode says"
            )
        } catch {
            cluster?.stop()
            throw error
        }
    }

    /// pgbouncer's answer to a startup packet with `options`, which the connection sends when it
    /// is not told of a pooler: `FATAL: unsupported startup parameter: options`.
    static func isRefusedStartupOptions(_ error: PostgresError) -> Bool {
        [error.serverMessage, error.context].contains { $0?.contains("unsupported startup parameter") == true }
    }

    /// Behind a pooler, before anything else: a transaction must hold one server connection (not
    /// so in pgbouncer's statement mode), and the server must answer in the formats the decoders
    /// read, whatever the pooler passed on. Without a server-side `statement_timeout` in
    /// transaction mode a runaway statement is only ended by `--db-timeout`: said once, at start.
    static func checkPooler(_ pool: PostgresPool, _ pooler: PostgresConfiguration.Pooler, logger: Logger) throws {
        let settings: (String, String, String, String, String)
        do {
            settings = try pool.withTransaction { connection in
                try connection.query(
                    """
                    SELECT current_setting('TimeZone'), current_setting('DateStyle'), current_setting('bytea_output'),
                           current_setting('extra_float_digits'), current_setting('statement_timeout')
                    """)[0].decode((String, String, String, String, String).self)
            }
        } catch let error as PostgresError where (error.serverMessage ?? "").contains("statement pooling") {
            // pgbouncer: "transaction blocks not allowed in statement pooling mode".
            throw PostgresError(
                code: .invalidConfiguration,
                context:
                    "the pooler is in statement mode, where a transaction cannot keep its connection; Exosphere needs pool_mode = session or transaction (\(error.serverMessage ?? ""))"
            )
        }
        let (timeZone, dateStyle, byteaOutput, floatDigits, statementTimeout) = settings
        guard timeZone == "UTC", dateStyle.hasPrefix("ISO"), byteaOutput == "hex", (Int(floatDigits) ?? 0) >= 1 else {
            throw PostgresError(
                code: .invalidConfiguration,
                context:
                    "behind the pooler the server answers with TimeZone=\(timeZone), DateStyle=\(dateStyle), bytea_output=\(byteaOutput), extra_float_digits=\(floatDigits); Exosphere needs UTC, ISO, hex and at least 1 (the pooler must pass TimeZone and DateStyle on; set the others on the server)"
            )
        }
        if pooler == .transaction, statementTimeout == "0" {
            logger.warning(
                "no statement_timeout behind a pooler in transaction mode: set it on the server (ALTER ROLE … SET statement_timeout = '30s'); until then only --db-timeout ends a runaway statement"
            )
        }
        logger.notice("connected through a pooler", ["postgres.pooler": pooler.rawValue, "postgres.statement_timeout": statementTimeout])
    }

    /// Whether the database answers and every migration is applied, for `/readyz`. A pool with no
    /// connection free is busy, not unready: taking the instance out of service during a spike
    /// would move its load onto the others. (A database that stops answering frees the pool's
    /// connections within `--db-timeout`, and the check then fails.)
    public func isReady() -> Bool {
        do {
            return try !migrator.hasPendingMigrations(on: pool)
        } catch let error as PostgresError where error.code == .poolTimeout {
            return true
        } catch {
            logger.warning("readiness check failed", ["error": String(describing: error)])
            return false
        }
    }

    /// Closes the pool (waiting for lent connections) and stops the managed cluster.
    public func shutdown() {
        if !pool.close(timeout: .seconds(10)) || !backgroundPool.close(timeout: .seconds(10)) {
            logger.warning("database connections still lent at shutdown")
        }
        if let cluster {
            cluster.stop()
            logger.notice("managed PostgreSQL stopped")
        }
    }
}
