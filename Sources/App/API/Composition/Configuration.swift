import Accounts
import HTTPServer
import Images
import LiveEvents
import Mail
import Outbox
import StructuredLogging
import Postgres
import Thumbnails
import Cryptography

/// Everything `exosphere serve` needs, read once at start-up from flags, then the environment, then defaults.
public struct Configuration: Sendable {
    public var server = ServerConfiguration()
    public var logLevel: Logger.Level = .info
    public var logFormat: Logger.Format = .json
    /// An existing PostgreSQL (`postgres://…` URL or libpq keywords); nil runs a managed local cluster.
    public var databaseURL: String?
    /// Where the managed local cluster keeps its data when there is no `databaseURL`.
    public var dataDirectory = "./.exosphere/postgres"
    /// Where the `NNNN_name.sql` migrations are; nil uses the ones compiled into the binary.
    public var migrationsDirectory: String?
    /// Database connections (default 2 × cores).
    public var databasePoolSize = PostgresPool.defaultSize
    /// How long a request waits for a free database connection before a `503`.
    public var databaseAcquireTimeout: Duration = .seconds(5)
    /// How long a statement waits for the database's answer before the request gets `503
    /// database_unavailable` and the connection is abandoned (a frozen or unreachable server).
    public var databaseResponseTimeout: Duration = .seconds(5)
    /// Whether `GET`, `PUT` and `PATCH /users/me` are answered on the event loop that read them,
    /// through a pipelined connection of that loop's own, instead of going to a worker thread and
    /// back. The loop never waits for the database: the statements of one wake-up go out together
    /// and their results are read when they arrive. Each loop adds one database connection.
    public var databasePipelining = true
    /// The connection pooler in front of PostgreSQL (pgbouncer), which decides what a connection
    /// may keep between transactions: `none`, `session` or `transaction` (see `PostgresConfiguration.Pooler`).
    public var databasePooler: PostgresConfiguration.Pooler = .none
    /// Sessions, throttles, password policy and custom-field limits.
    public var accounts = AccountService.Configuration()
    /// scrypt cost for new hashes: OWASP's N=2^14, r=8, p=5 (16 MiB a hash) by default; the
    /// command line accepts nothing below one of OWASP's equal-strength configurations.
    public var passwordHashing = ScryptParameters.owaspCompact
    /// Threads that hash passwords (default: one per core) and how many hashes may wait.
    public var hashingThreads = HashingPool.defaultWorkerCount
    public var hashingQueue = 8 * HashingPool.defaultWorkerCount
    /// Event streams: their heartbeat, and how often a lost listening connection is tried again.
    public var liveEvents = LiveEventHub.Configuration()
    /// The event streams one user may hold open on an instance at once (`429 too_many_streams` beyond).
    public var maxStreamsPerUser = 5
    /// The hashing threads' scheduling: `idle` by default (see `HashingPool.Priority`).
    public var hashingPriority = HashingPool.Priority.idle
    /// A JSON file `{"fields": {"name": "type", …}}` that pins custom field types.
    public var fieldConfigPath: String?
    /// Where users' images are kept, their directory and size limit.
    public var images = ImageService.Configuration()
    /// Where `/metrics` is served instead of on the public listener (for the operator's network);
    /// nil serves it with the API.
    public var metricsListen: (host: String, port: Int)?
    /// Reverse proxies whose `X-Forwarded-For` names the client, in `ClientAddress.canonical` form; none by default.
    public var trustedProxies: Set<String> = []
    /// Where mail goes (an SMTP relay, or the dev mailbox `./.exosphere/mail`), its sender, the
    /// app's name and the sender's pace. `mail.publicURL` is replaced by `publicURL`.
    public var mail = OutboxSender.Configuration()
    /// The base of links in mail (`https://accounts.example.com`); nil means
    /// `http://localhost:<port>`, good for a developer's machine only.
    public var publicURL: String?
    /// How long a signed image URL (`signedUrl`) works: 1 hour by default, a week at most.
    public var signedURLSeconds = 3_600
    /// The thumbnail helper processes (`helpers` 0 makes no thumbnails).
    public var thumbnails = ThumbnailerPool.Configuration()
    /// The sender of mail; nil means the app's name at `no-reply@` the public URL's host.
    public var mailFrom: MailAddress?
    /// A directory of mail templates that replace the built-in ones (`MailTemplates`).
    public var mailTemplatesDirectory: String?
    /// The apps that open mailed links themselves (`/.well-known/…`).
    public var appLinks = AppLinks()
    /// Sign in with Apple and Google: accepted client ids and where the providers' keys are.
    public var identityProviders = IdentityProviderConfiguration()
    /// Passkeys: the RP id and the origins they are for (default: the public URL's).
    public var webAuthn = WebAuthnConfiguration()

    public init() {}

    /// `mailFrom`, or the app's name at `no-reply@` the public URL's host.
    public var resolvedMailFrom: MailAddress {
        if let mailFrom { return mailFrom }
        let host = OutboxSender.host(of: resolvedPublicURL) ?? "localhost"
        return MailAddress("no-reply@" + (host.hasPrefix("[") ? "localhost" : host), displayName: mail.appName)
    }

    /// `publicURL`, or `http://localhost:<port>` (the listening host when it names one).
    public var resolvedPublicURL: String { resolvedPublicURL(port: server.port) }

    /// `resolvedPublicURL` with the port the server got (`--port 0` asks for any).
    public func resolvedPublicURL(port: Int) -> String {
        if let publicURL { return publicURL.hasSuffix("/") ? String(publicURL.dropLast()) : publicURL }
        let host = ["0.0.0.0", "::", ""].contains(server.host) ? "localhost" : server.host.contains(":") ? "[\(server.host)]" : server.host
        return "http://\(host):\(port)"
    }
}

/// A configuration problem, reported as one line before exiting non-zero.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    /// One line per problem.
    public let problems: [String]
    public init(_ problem: String) { problems = [problem] }
    public init(_ problems: [String]) { self.problems = problems }
    public var description: String { problems.joined(separator: "\n") }
}
