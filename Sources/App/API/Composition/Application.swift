import Accounts
import CLinux
import Glibc
import HTTPServer
import Lifecycle
import Images
import LiveEvents
import Mail
import Outbox
import StructuredLogging
import PostgresLoop
import Cryptography
import Thumbnails
import Threads

/// The running service: the services it is made of (`services`), started in order and stopped
/// in reverse, then the HTTP server.
public final class Application: Sendable {
    /// The version this build reports (`exosphere --version`, `/metrics`, the OpenAPI document).
    public static let version = "0.1.0"

    public let configuration: Configuration
    public let logger: Logger
    public let database: Database
    public let hashing: HashingPool
    public let accounts: AccountService
    public let images: ImageService
    /// Signs the image URLs that need no token.
    public let signer: URLSigner
    /// The helper processes that make thumbnails; nil with `--thumbnail-helpers 0`.
    public let thumbnailer: ThumbnailerPool?
    /// Sends the mail outbox's rows (every instance runs one).
    public let mail: OutboxSender
    /// The open event streams and what feeds them; nil behind a pooler in transaction mode.
    public let liveEvents: LiveEventHub?
    /// Sign in with Apple and Google: the providers that are on, with their key sets.
    let identityProviders: IdentityProviders
    /// The RP id and origins of passkeys, resolved once the port is bound.
    let relyingParty = RelyingPartySource()
    public let server: Server
    /// `/metrics` on its own listener (`Configuration.metricsListen`), or nil.
    public let metricsServer: Server?
    /// Every service above that runs, in the order it started: `shutdown` stops them in reverse,
    /// and so does a start that fails part-way.
    public let services: ServiceGroup

    /// Deletes the guests idle for `--guest-ttl-days` with their images (the rows in the guest's
    /// transaction, the files after it commits); returns how many went. Runs in the background
    /// at the housekeeping's interval; exposed for tests.
    @discardableResult
    public func deleteIdleGuests() throws -> Int {
        try Application.deleteIdleGuests(accounts: accounts, images: images)
    }

    private static func deleteIdleGuests(accounts: AccountService, images: ImageService) throws -> Int {
        try accounts.guests.deleteIdle { connection, id in
            let files = try images.deleteAll(userID: id, connection)
            return { images.removeFiles(files) }
        }
    }

    /// Starts the services in order, the HTTP server last; returns once the socket accepts. When
    /// one fails, every one started before it is stopped, in reverse, and the error is thrown.
    public init(configuration: Configuration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        let services = ServiceGroup(logger: logger)
        self.services = services
        do {
            let pinned = try configuration.fieldConfigPath.map { try FieldConfiguration.load(path: $0) } ?? [:]
            let hasher = try PasswordHasher(
                parameters: configuration.passwordHashing, allowWeakParameters: !configuration.passwordHashing.isAtLeastOWASP)
            let templates = try configuration.mailTemplatesDirectory.map { try MailTemplates.load(overridesIn: $0) } ?? .builtIn
            let database = try services.start("database", { try Database.start(configuration, logger: logger) }, stop: { $0.shutdown() })
            self.database = database
            var mailConfiguration = configuration.mail
            mailConfiguration.publicURL = configuration.resolvedPublicURL
            mailConfiguration.from = configuration.resolvedMailFrom
            if case .smtp(let smtp) = mailConfiguration.transport, smtp.security == .none, !smtp.isLoopback {
                logger.warning("mail goes to the relay without TLS: passwords and links can be read on the way", ["smtp": smtp.description])
            }
            let backgroundPool = database.backgroundPool
            let mail = try services.start(
                "mail",
                {
                    OutboxSender(
                        pool: backgroundPool, configuration: mailConfiguration, templates: templates, logger: logger,
                        mintToken: { [clock = configuration.accounts.clock] slot in
                            try AccountMail.mintMailToken(slot: slot, on: backgroundPool, clock: clock)
                        },
                        mintCode: { [clock = configuration.accounts.clock] slot in
                            try EmailCodes.mintMailCode(slot: slot, on: backgroundPool, clock: clock)
                        })
                }, stop: { $0.shutdown() })
            self.mail = mail
            let hashing = try services.start(
                "hashing",
                {
                    HashingPool(
                        workers: configuration.hashingThreads, queueCapacity: configuration.hashingQueue, priority: configuration.hashingPriority)
                }, stop: { $0.shutdown() })
            self.hashing = hashing
            let accounts = try services.start(
                "accounts",
                {
                    var accounts = configuration.accounts
                    accounts.issuerName = configuration.mail.appName
                    return AccountService(
                        pool: database.pool, backgroundPool: database.backgroundPool, hasher: hasher, hashing: hashing,
                        configuration: accounts, logger: logger, mailQueued: { mail.wake() })
                }, stop: { $0.shutdown() })
            self.accounts = accounts
            if !pinned.isEmpty {
                try database.pool.withConnection { try accounts.schema.pin(pinned, $0) }
            }
            // Images are decoded only in helper processes: a crafted file never runs in this one.
            let thumbnailer =
                configuration.thumbnails.helpers > 0
                ? try services.start(
                    "thumbnailer",
                    {
                        let pool = ThumbnailerPool(configuration: configuration.thumbnails, logger: logger)
                        try pool.start()
                        return pool
                    }, stop: { $0.shutdown() })
                : nil
            self.thumbnailer = thumbnailer
            let images = try services.start(
                "images",
                {
                    let images = ImageService(pool: database.pool, configuration: configuration.images, logger: logger, thumbnailer: thumbnailer)
                    try images.prepare()
                    return images
                }, stop: { $0.shutdown() })
            self.images = images
            let signer = try services.start(
                "url-signer",
                {
                    let signer = URLSigner(pool: database.pool, lifetimeSeconds: configuration.signedURLSeconds, clock: configuration.accounts.clock)
                    try signer.prepare()
                    signer.startRefreshing()
                    return signer
                }, stop: { $0.shutdown() })
            self.signer = signer
            // Idle guests go with their images, one instance at a time at most per guest (each is
            // locked and checked again before it goes); image objects whose removal the store
            // refused are tried again (every 30 s at most: the queue keeps each one's backoff); and
            // every `objectSweepIntervalSeconds`, objects no row names are removed.
            let sweeps = PeriodicThread(
                name: "sweeps", intervalNanoseconds: UInt64(min(30, max(0.05, configuration.accounts.housekeepingIntervalSeconds)) * 1e9))
            try services.start(
                "sweeps",
                {
                    sweeps.start {
                        do {
                            _ = try Application.deleteIdleGuests(accounts: accounts, images: images)
                        } catch {
                            logger.warning("deleting idle guests failed", ["error": String(describing: error)])
                        }
                        images.drainObjectDeletions()
                        do {
                            if let removed = try images.sweepObjectsIfDue(), removed > 0 {
                                logger.notice("image objects without a row removed", ["images.orphan_objects": String(removed)])
                            }
                        } catch {
                            logger.warning("could not sweep the image store's orphan objects", ["error": String(describing: error)])
                        }
                    }
                }, stop: sweeps.stop)
            let swept = try images.sweep()
            if swept.orphanFiles + swept.temporaryFiles + swept.orphanObjects > 0 {
                logger.notice(
                    "image files swept",
                    [
                        "images.orphan_files": String(swept.orphanFiles), "images.temporary_files": String(swept.temporaryFiles),
                        "images.orphan_objects": String(swept.orphanObjects),
                    ])
            }
            // One connection listens for every stream of this instance; a pooler in transaction mode
            // cannot carry LISTEN, and there `GET /users/me/events` answers 501 events_unavailable.
            if configuration.databasePooler == .transaction {
                logger.notice("live events are off behind a pooler in transaction mode: LISTEN needs a session")
                liveEvents = nil
            } else {
                var listener = database.pool.configuration
                listener.applicationName = "exosphere-events"
                listener.responseTimeout = nil
                liveEvents = try services.start(
                    "live-events",
                    {
                        LiveEventHub(
                            source: DatabaseEventSource(accounts: accounts, images: images, signer: signer, listener: listener),
                            configuration: configuration.liveEvents, logger: logger.with("component", "events"))
                    }, stop: { $0.shutdown() })
            }
            identityProviders = IdentityProviders(configuration.identityProviders)
            // The metrics exist before the server so that the route serving them can be in its table.
            let metrics = HTTPMetrics()
            // pgbouncer 1.18 in transaction mode may lend the server connection to another client at
            // the first sync of a pipeline that has more in flight (PoolerTests saw the answers of a
            // later batch go astray): there, every request goes to the worker pool.
            let pipelining = configuration.databasePipelining && configuration.databasePooler != .transaction
            if configuration.databasePipelining, !pipelining {
                logger.notice("pipelined database connections are off behind a pooler in transaction mode")
            }
            let pipelines = pipelining ? Pipelines(configuration: database.pool.configuration, logger: logger) : nil
            let metricsController = MetricsController(
                http: metrics, database: database.pool, hashing: hashing, accounts: accounts.statistics, images: images,
                pipelines: pipelines?.statistics, mail: mail.statistics, liveEvents: liveEvents, sessionCache: accounts.sessionCache)
            var serverConfiguration = configuration.server
            // A trusted proxy carries many clients: no per-address cap on its connections.
            serverConfiguration.unlimitedAddresses.formUnion(configuration.trustedProxies)
            let server = Server(
                configuration: serverConfiguration,
                router: Application.routes(
                    database: database, accounts: accounts, images: images, signer: signer, trustedProxies: configuration.trustedProxies,
                    pipelines: pipelines, appLinks: configuration.appLinks, metrics: configuration.metricsListen == nil ? metricsController : nil,
                    liveEvents: liveEvents, identityProviders: identityProviders, relyingParty: relyingParty,
                    settings: RouteSettings(configuration, defaultBodyLimit: serverConfiguration.limits.maxBodyBytes)),
                logger: logger, metrics: metrics)
            self.server = server
            try services.start("http", server.start, stop: server.shutdown)
            relyingParty.resolve(configuration, port: server.port)
            let metricsServer = configuration.metricsListen.map { listen in
                var router = Router()
                metricsController.register(in: &router)
                var serverConfiguration = ServerConfiguration()
                serverConfiguration.host = listen.host
                serverConfiguration.port = listen.port
                serverConfiguration.eventLoops = 1
                serverConfiguration.workerThreads = 2
                serverConfiguration.maxConnections = 64
                serverConfiguration.accessLog = false
                return Server(configuration: serverConfiguration, router: router, logger: logger.with("listener", "metrics"))
            }
            self.metricsServer = metricsServer
            if let metricsServer { try services.start("metrics-http", metricsServer.start, stop: metricsServer.shutdown) }
            let memoryTrimmer = PeriodicThread(name: "memory-trim", intervalNanoseconds: 2_000_000_000)
            try services.start("memory-trim", { memoryTrimmer.start { Application.trimMemory() } }, stop: memoryTrimmer.stop)
        } catch {
            logger.error(
                "start failed; stopping what started", ["error": String(describing: error), "services": services.names.joined(separator: ",")])
            services.shutdown()
            throw error
        }
        logger.notice("listening", ["http.host": configuration.server.host, "http.port": String(server.port)])
        if let metricsServer, let listen = configuration.metricsListen {
            logger.notice("metrics listening", ["http.host": listen.host, "http.port": String(metricsServer.port)])
        }
    }

    /// The route table, in one place. With `pipelines`, `GET`, `PUT` and `PATCH /users/me` are
    /// answered on the event loops (`Configuration.databasePipelining`); with `metrics`, `/metrics`
    /// is one of its routes.
    static func routes(
        database: Database, accounts: AccountService, images: ImageService, signer: URLSigner, trustedProxies: Set<String> = [],
        pipelines: Pipelines? = nil, appLinks: AppLinks = AppLinks(), metrics: MetricsController? = nil, liveEvents: LiveEventHub? = nil,
        identityProviders: IdentityProviders = IdentityProviders(IdentityProviderConfiguration()),
        relyingParty: RelyingPartySource = RelyingPartySource(), settings: RouteSettings? = nil
    ) -> Router {
        var table = RouteTable(
            services: RouteTable.Services(
                accounts: accounts, authenticator: Authenticator(trustedProxies: trustedProxies),
                database: DatabaseAccess(pool: database.pool, pipelines: pipelines), signer: signer),
            settings: settings
                ?? RouteSettings(defaultBodyLimit: ServerConfiguration().limits.maxBodyBytes, imageMaxBytes: images.configuration.maxBytes))
        let parts = Parts(
            database: database, accounts: accounts, images: images, signer: signer, liveEvents: liveEvents,
            identityProviders: identityProviders, relyingParty: relyingParty, metrics: metrics)
        mount(into: &table, parts, appLinks: appLinks, servesMetrics: metrics != nil)
        return table.router
    }

    /// The routes the deployment `configuration` describes, as declared: no database opened, no
    /// service started (`exosphere routes`).
    static func declarations(_ configuration: Configuration) -> [RouteTable.Declaration] {
        var table = RouteTable(listing: RouteSettings(configuration, defaultBodyLimit: configuration.server.limits.maxBodyBytes))
        mount(into: &table, nil, appLinks: configuration.appLinks, servesMetrics: configuration.metricsListen == nil)
        return table.declarations
    }

    /// What the controllers are made of; nil for a table that is only read.
    private struct Parts {
        let database: Database
        let accounts: AccountService
        let images: ImageService
        let signer: URLSigner
        let liveEvents: LiveEventHub?
        let identityProviders: IdentityProviders
        let relyingParty: RelyingPartySource
        let metrics: MetricsController?
    }

    /// Every controller, in the order of the table, made from `parts` when it serves.
    private static func mount(into table: inout RouteTable, _ parts: Parts?, appLinks: AppLinks, servesMetrics: Bool) {
        table.mount(HealthController.self, parts.map { HealthController(database: $0.database, images: $0.images) })
        table.mount(AccountsController.self, parts.map { AccountsController(accounts: $0.accounts) })
        table.mount(IdentitiesController.self, parts.map { IdentitiesController(accounts: $0.accounts, providers: $0.identityProviders) })
        table.mount(PasskeysController.self, parts.map { PasskeysController(accounts: $0.accounts, party: $0.relyingParty) })
        table.mount(SecondFactorController.self, parts.map { SecondFactorController(accounts: $0.accounts) })
        table.mount(ProfileController.self, parts.map { ProfileController(accounts: $0.accounts, images: $0.images) })
        table.mount(
            ReauthenticationController.self,
            parts.map { ReauthenticationController(accounts: $0.accounts, providers: $0.identityProviders, party: $0.relyingParty) })
        let images = parts.map { ImagesController(images: $0.images, signer: $0.signer) }
        table.mount(ImagesController.self, images)
        table.mount(RecoveryController.self, parts.map { RecoveryController(accounts: $0.accounts) })
        table.mount(ExportController.self, parts.map { ExportController(accounts: $0.accounts, images: $0.images, signer: $0.signer) })
        table.mount(EventsController.self, parts.map { EventsController(accounts: $0.accounts, hub: $0.liveEvents) })
        table.mount(
            AdminController.self,
            parts.map { AdminController(accounts: $0.accounts, images: $0.images, signer: $0.signer, imageResponses: images!) })
        table.mount(PagesController.self, PagesController(apps: appLinks))
        table.mount(ConsoleController.self, ConsoleController())
        table.mount(OpenAPIController.self, OpenAPIController())
        if servesMetrics { table.mount(MetricsController.self, parts?.metrics) }
    }

    /// The console's one-time setup link while there is no administrator (`/console/#setup=…`,
    /// an hour, single use), or nil once there is one. `serve` prints it once, at start.
    public func adminSetupLink() throws -> String? {
        guard let token = try accounts.administrators.issueAdminSetupToken() else { return nil }
        return configuration.resolvedPublicURL(port: server.port) + "/console/#setup=" + token
    }

    /// Stops every service in reverse order of start: the HTTP server drains first (which ends
    /// every event stream: its clients reconnect to another instance), the database closes last.
    public func shutdown() {
        logger.notice("shutting down", ["drain.seconds": String(configuration.server.drainTimeout.components.seconds)])
        services.shutdown()
        logger.notice("stopped")
    }

    /// Makes glibc give large blocks back to the system when they are freed: every allocation of
    /// 1 MiB or more (an scrypt buffer, an image body) gets its own mapping. Left to itself, glibc
    /// raises that threshold to the largest block freed so far (up to 32 MiB), after which a
    /// 16 MiB scrypt buffer stays in a thread's heap, resident, after its hash.
    ///
    /// And keeps glibc to 2 malloc arenas per core (8 by default): each arena keeps what its
    /// threads freed, and with the worker pool's threads each rendering 56 KiB profiles (a loop
    /// of `PATCH /users/me` beside 200 unread event streams, `bench/streams-memory.sh`) the peak
    /// grew 38 to 87 MiB over the start in six runs, 48 to 63 with 4 arenas; `GET /users/me`
    /// at 64 connections was the same (`bench/me.sh`: 91,200 and 91,012 req/s).
    public static func returnLargeBlocksToTheSystem() {
        _ = clinux_set_mmap_threshold(1 << 20)
        _ = clinux_set_arena_max(Int32(max(2, 2 * sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
    }

    /// Gives the free memory of glibc's arenas back to the system. Memory a thread frees stays in
    /// its arena, resident, until the arena's top is free (rarely, with many threads allocating
    /// and freeing each other's blocks): after 8 s of `PUT /users/me` at 64 connections with the session cache
    /// (entries filled on the event loops and dropped by the cache's feed), 56 MiB were resident,
    /// 30 MiB after a trim. Cheap (the arenas are a few MiB each) and done every 2 s.
    static func trimMemory() {
        _ = clinux_malloc_trim()
    }

    /// Blocks SIGTERM and SIGINT in the calling thread, before any other thread starts, so every
    /// thread inherits the mask and `waitForSignal` is the only place they are seen.
    public static func blockTerminationSignals() {
        var signals = terminationSignals
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        signal(SIGPIPE, SIG_IGN)
    }

    /// Waits for SIGTERM or SIGINT and returns its name.
    public static func waitForSignal() -> String {
        var signals = terminationSignals
        var received: Int32 = 0
        sigwait(&signals, &received)
        return received == SIGTERM ? "SIGTERM" : "SIGINT"
    }

    private static var terminationSignals: sigset_t {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        return signals
    }
}
