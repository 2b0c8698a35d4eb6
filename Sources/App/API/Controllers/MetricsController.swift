import Accounts
import Files
import Glibc
import HTTP
import HTTPServer
import Images
import ObjectStorage
import LiveEvents
import Thumbnails
import Outbox
import Postgres
import PostgresLoop
import Cryptography

/// `GET /metrics`: the HTTP server's, the pools' and the process's figures in the Prometheus text format.
struct MetricsController: Controller {
    /// The server's request figures, and its worker pool's once the server exists.
    let http: HTTPMetrics
    let database: PostgresPool
    /// Nil only where a route table is built without a running application; its families are then left out.
    let hashing: HashingPool?
    let accounts: AccountService.Statistics?
    let images: ImageService?
    /// Nil with `--db-pipelining off`.
    let pipelines: Pipelines.Statistics?
    /// This instance's mail sender; nil where a route table is built without one.
    let mail: OutboxSender.Statistics?
    /// Nil behind a pooler in transaction mode (no live events) and where a route table is built without one.
    var liveEvents: LiveEventHub? = nil
    /// This instance's cache of sessions and users; nil where a route table is built without one.
    var sessionCache: SessionCache? = nil

    /// On the API's listener. Blocking: it takes the pools' locks and reads /proc.
    static func declare(_ routes: inout Routes<Self>) {
        routes.open(.get, "/metrics") { controller in { _ in controller.response() } }
    }

    /// On a listener of its own (`Configuration.metricsListen`), its only route.
    func register(in router: inout Router) {
        router.get("/metrics") { [self] _, _ in response() }
    }

    private func response() -> Response {
        Response(status: .ok, contentType: PrometheusText.contentType, body: exposition().bytes)
    }

    /// Every family, in a stable order; series within a family are sorted by their labels.
    func exposition() -> PrometheusText {
        var text = PrometheusText()
        writeHTTP(into: &text)
        writeDatabase(database.statistics, into: &text)
        if let pipelines { writePipelines(pipelines, into: &text) }
        if let hashing { writeHashing(hashing.statistics, into: &text) }
        if let accounts { writeThrottles(accounts, into: &text) }
        if let images { writeImages(images, into: &text) }
        if let mail { writeMail(mail, into: &text) }
        if let liveEvents { writeLiveEvents(liveEvents.statistics, into: &text) }
        if let sessionCache, sessionCache.isEnabled { writeSessionCache(sessionCache, into: &text) }
        if let thumbnails = images?.thumbnailer?.statistics { writeThumbnails(thumbnails, into: &text) }
        text.family("exosphere_build_info", type: .gauge, help: "Always 1; the labels describe the running build.")
        text.sample("exosphere_build_info", ["version": Application.version], 1)
        ProcessFigures.read().write(into: &text)
        return text
    }

    private func writeHTTP(into text: inout PrometheusText) {
        let snapshot = http.snapshot.sorted { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }
        text.family(
            "exosphere_http_requests_total", type: .counter,
            help: "HTTP requests answered, by route pattern (\"-\" when no route matched), method and status.")
        for (series, histogram) in snapshot {
            text.sample(
                "exosphere_http_requests_total",
                ["route": series.route, "method": series.method, "status": String(series.status)], histogram.count)
        }

        // The histogram is per route and method: statuses are summed, which the sorted order makes adjacent.
        var byRoute: [(route: String, method: String, histogram: HTTPMetrics.Histogram)] = []
        for (series, histogram) in snapshot {
            if let last = byRoute.last, last.route == series.route, last.method == series.method {
                byRoute[byRoute.count - 1].histogram = Self.merge(last.histogram, histogram)
            } else {
                byRoute.append((series.route, series.method, histogram))
            }
        }
        text.family(
            "exosphere_http_request_duration_seconds", type: .histogram,
            help: "Time from a request's head being read to the last byte of its response being written, by route pattern and method.")
        for (route, method, histogram) in byRoute {
            text.histogram(
                "exosphere_http_request_duration_seconds", ["route": route, "method": method],
                bounds: HTTPMetrics.bucketBounds, cumulativeCounts: histogram.buckets,
                count: histogram.count, sum: histogram.sumSeconds)
        }

        text.metric(
            "exosphere_http_requests_in_flight", type: .gauge,
            help: "Requests whose handler is running.", http.requestsInFlight)
        text.metric("exosphere_http_connections_open", type: .gauge, help: "Open client connections.", http.connectionsOpen)
        text.metric(
            "exosphere_http_connections_accepted_total", type: .counter,
            help: "Client connections accepted.", http.connectionsAccepted)
        text.metric(
            "exosphere_http_accept_exhausted_total", type: .counter,
            help: "Accepts that failed for lack of file descriptors or memory; each pauses accepting for 100 ms.",
            http.acceptsExhausted)

        guard let workers = http.workerStatistics else { return }
        text.family("exosphere_http_workers", type: .gauge, help: "Threads of the HTTP worker pool, by state.")
        text.sample("exosphere_http_workers", ["state": "busy"], workers.busy)
        text.sample("exosphere_http_workers", ["state": "idle"], workers.threads - workers.busy)
        text.metric(
            "exosphere_http_worker_queue_length", type: .gauge,
            help: "Requests waiting for an HTTP worker.", workers.queued)
        text.metric(
            "exosphere_http_worker_rejected_total", type: .counter,
            help: "Requests refused with 503 because the HTTP worker queue was full.", workers.rejected)
    }

    /// Counted in the database at each scrape, so every instance reports the same totals.
    private func writeImages(_ images: ImageService, into text: inout PrometheusText) {
        guard let totals = try? images.totals() else { return }  // the database's own families show why
        text.family("exosphere_images_stored", type: .gauge, help: "Images kept, by storage.")
        for storage in ImageStorage.allCases {
            text.sample("exosphere_images_stored", ["storage": storage.rawValue], totals[storage]?.count ?? 0)
        }
        text.family("exosphere_image_bytes_stored", type: .gauge, help: "Bytes of the images kept, by storage.")
        for storage in ImageStorage.allCases {
            text.sample("exosphere_image_bytes_stored", ["storage": storage.rawValue], totals[storage]?.bytes ?? 0)
        }
        if let store = images.objectStore?.statistics {
            text.metric(
                "exosphere_image_store_requests_total", type: .counter, help: "Requests this instance made to the image store.", store.requests)
            text.metric(
                "exosphere_image_store_errors_total", type: .counter,
                help: "Requests to the image store that failed (unreachable, timed out, refused, 5xx; not 404 or 304).", store.failures)
            text.metric(
                "exosphere_image_store_request_seconds_total", type: .counter, help: "Time spent in requests to the image store.", store.seconds)
            text.metric(
                "exosphere_image_store_connections_opened_total", type: .counter,
                help: "Connections opened to the image store (others are kept alive).",
                store.connectionsOpened)
            if let pending = try? images.pendingObjectDeletions() {
                text.metric(
                    "exosphere_image_store_pending_deletions", type: .gauge, help: "Objects of deleted images not yet removed from the store.",
                    pending)
            }
        }
    }

    private func writeDatabase(_ pool: PostgresPool.Statistics, into text: inout PrometheusText) {
        text.family("exosphere_db_pool_connections", type: .gauge, help: "Database connections of the pool, by state.")
        text.sample("exosphere_db_pool_connections", ["state": "in_use"], pool.inUse)
        text.sample("exosphere_db_pool_connections", ["state": "idle"], pool.idle)
        text.metric("exosphere_db_pool_size", type: .gauge, help: "The most database connections the pool opens.", pool.size)
        text.metric(
            "exosphere_db_pool_waiting", type: .gauge,
            help: "Threads waiting for a database connection.", pool.waiting)
        text.metric(
            "exosphere_db_pool_connections_created_total", type: .counter,
            help: "Database connections opened.", pool.created)
        text.metric(
            "exosphere_db_pool_connections_failed_total", type: .counter,
            help: "Failed attempts to open a database connection.", pool.failed)
        text.metric(
            "exosphere_db_pool_connections_discarded_total", type: .counter,
            help: "Database connections closed because they broke or were returned mid-transaction.", pool.discarded)
        text.metric(
            "exosphere_db_pool_connections_timeouts_total", type: .counter,
            help: "Waits for a free database connection that gave up after the acquire timeout.", pool.timedOut)
        text.metric(
            "exosphere_db_pool_failing", type: .gauge,
            help: "1 while the database is failing (a connection could not be opened or broke, and none has come back healthy since).",
            pool.failing ? 1 : 0)
        text.metric(
            "exosphere_db_pool_failed_fast_total", type: .counter,
            help: "Requests for a database connection answered at once because the database was failing and none was free.",
            pool.failedFast)
    }

    private func writePipelines(_ pipelines: Pipelines.Statistics, into text: inout PrometheusText) {
        text.metric(
            "exosphere_db_pipelines_open", type: .gauge,
            help: "Pipelined database connections of the event loops that are open.", pipelines.open.load(ordering: .relaxed))
        text.metric(
            "exosphere_db_pipelined_queries_total", type: .counter,
            help: "Statements (reads and writes) sent on the event loops' pipelined connections.", pipelines.sent.load(ordering: .relaxed))
        text.metric(
            "exosphere_db_pipeline_offloaded_total", type: .counter,
            help:
                "Statements and transactions of requests answered on the event loops that ran on a pooled connection on the worker pool: no pipeline open, a statement that could not run on it, or a transaction.",
            pipelines.offloaded.load(ordering: .relaxed))
    }

    private func writeThrottles(_ accounts: AccountService.Statistics, into text: inout PrometheusText) {
        text.metric(
            "exosphere_signin_failures_total", type: .counter,
            help: "Sign-ins refused for a wrong email or password.", accounts.signInFailures.load(ordering: .relaxed))
        text.family(
            "exosphere_throttled_total", type: .counter,
            help:
                "Attempts refused with 429 by a throttle: sign-in (per email and address, email, address), password check (per user), registration (per address) or password reset request (per email, address)."
        )
        text.sample("exosphere_throttled_total", ["throttle": "signin"], accounts.signInThrottled.load(ordering: .relaxed))
        text.sample("exosphere_throttled_total", ["throttle": "password"], accounts.passwordChecksThrottled.load(ordering: .relaxed))
        text.sample("exosphere_throttled_total", ["throttle": "registration"], accounts.registrationThrottled.load(ordering: .relaxed))
        text.sample("exosphere_throttled_total", ["throttle": "password_reset"], accounts.resetThrottled.load(ordering: .relaxed))
        text.metric(
            "exosphere_guests_created_total", type: .counter, help: "Guest accounts made (POST /users/guest).",
            accounts.guestsCreated.load(ordering: .relaxed))
        text.metric(
            "exosphere_guests_deleted_total", type: .counter, help: "Guests deleted with their images after --guest-ttl-days idle.",
            accounts.guestsDeleted.load(ordering: .relaxed))
    }

    private func writeLiveEvents(_ events: LiveEventHub.Statistics, into text: inout PrometheusText) {
        text.metric("exosphere_event_streams_open", type: .gauge, help: "Open GET /users/me/events streams.", events.open)
        text.metric("exosphere_event_streams_opened_total", type: .counter, help: "Event streams opened.", events.opened)
        text.metric("exosphere_events_delivered_total", type: .counter, help: "Events handed to streams.", events.delivered)
        text.family(
            "exosphere_event_catchups_total", type: .counter,
            help: "Reads of what a user's streams lacked: done, or failed (tried again).")
        text.sample("exosphere_event_catchups_total", ["outcome": "done"], events.catchUps)
        text.sample("exosphere_event_catchups_total", ["outcome": "failed"], events.catchUpFailures)
        text.family(
            "exosphere_event_sweeps_total", type: .counter,
            help: "Checks of every stream's position and session against the database: done, or failed.")
        text.sample("exosphere_event_sweeps_total", ["outcome": "done"], events.sweeps)
        text.sample("exosphere_event_sweeps_total", ["outcome": "failed"], events.sweepFailures)
        text.metric(
            "exosphere_event_marked_users", type: .gauge,
            help: "Users this instance has marked as having streams (their changes are kept and notified).", events.watchedUsers)
        text.metric(
            "exosphere_event_listener_up", type: .gauge,
            help: "1 while the LISTEN connection is up; while 0, streams get nothing new (and miss nothing: it catches up).",
            events.listening ? 1 : 0)
        text.metric(
            "exosphere_event_listener_connects_total", type: .counter, help: "Times the LISTEN connection was opened.", events.listenerConnects)
    }

    private func writeSessionCache(_ cache: SessionCache, into text: inout PrometheusText) {
        let statistics = cache.statistics
        text.family(
            "exosphere_session_cache_lookups_total", type: .counter,
            help: "Authentications answered from the session cache (hit) or by the database (miss: not cached, or the cache not fresh).")
        text.sample("exosphere_session_cache_lookups_total", ["outcome": "hit"], statistics.hits.load(ordering: .relaxed))
        text.sample("exosphere_session_cache_lookups_total", ["outcome": "miss"], statistics.misses.load(ordering: .relaxed))
        text.metric(
            "exosphere_session_cache_evictions_total", type: .counter, help: "Entries dropped to make room (least recently used first).",
            statistics.evictions.load(ordering: .relaxed))
        text.metric(
            "exosphere_session_cache_invalidations_total", type: .counter,
            help: "Users whose entries were dropped because a change to them committed (here or on another instance).",
            statistics.invalidations.load(ordering: .relaxed))
        text.metric(
            "exosphere_session_cache_flushes_total", type: .counter,
            help: "Times the whole cache was emptied: its feed reconnected, read late, or found another database server.",
            statistics.flushes.load(ordering: .relaxed))
        text.metric(
            "exosphere_session_cache_refused_fills_total", type: .counter,
            help: "Database reads not kept because their user changed while they ran.", statistics.refusedFills.load(ordering: .relaxed))
        let usage = cache.usage
        text.metric("exosphere_session_cache_entries", type: .gauge, help: "Sessions in the cache.", usage.entries)
        text.metric(
            "exosphere_session_cache_bytes", type: .gauge, help: "Estimated bytes the entries take (bounded by --session-cache-mb).",
            usage.bytes)
        text.metric(
            "exosphere_session_cache_fresh", type: .gauge,
            help: "1 while the cache serves (its feed read every change less than the staleness bound ago); 0: every request reads the database.",
            cache.isFresh() ? 1 : 0)
        text.metric(
            "exosphere_session_cache_feed_connects_total", type: .counter, help: "Times the cache's feed opened its database connection.",
            statistics.feedConnects.load(ordering: .relaxed))
        text.metric(
            "exosphere_session_cache_feed_reads_total", type: .counter, help: "Reads of committed changes the feed applied.",
            statistics.feedReads.load(ordering: .relaxed))
    }

    private func writeMail(_ mail: OutboxSender.Statistics, into text: inout PrometheusText) {
        text.family(
            "exosphere_mail_total", type: .counter,
            help: "Mails this instance's sender handled: sent (the relay took it), retried (a transient failure) or failed (refused for good).")
        text.sample("exosphere_mail_total", ["outcome": "failed"], mail.failed.load(ordering: .relaxed))
        text.sample("exosphere_mail_total", ["outcome": "retried"], mail.retried.load(ordering: .relaxed))
        text.sample("exosphere_mail_total", ["outcome": "sent"], mail.sent.load(ordering: .relaxed))
    }

    private func writeThumbnails(_ thumbnails: ThumbnailerPool.Statistics, into text: inout PrometheusText) {
        text.family(
            "exosphere_thumbnail_jobs_total", type: .counter,
            help:
                "Images the thumbnail helpers were given: made, undecodable (refused, crashed twice, out of CPU or time) or unavailable (no helper free: 503)."
        )
        text.sample("exosphere_thumbnail_jobs_total", ["outcome": "made"], thumbnails.made)
        text.sample("exosphere_thumbnail_jobs_total", ["outcome": "unavailable"], thumbnails.unavailable)
        text.sample("exosphere_thumbnail_jobs_total", ["outcome": "undecodable"], thumbnails.undecodable)
        text.metric(
            "exosphere_thumbnail_helper_deaths_total", type: .counter,
            help: "Thumbnail helper processes that died or were killed (a crash, the CPU allowance, the deadline); each is replaced.",
            thumbnails.helperDeaths)
    }

    private func writeHashing(_ hashing: HashingPool.Statistics, into text: inout PrometheusText) {
        text.metric(
            "exosphere_hashing_queue_length", type: .gauge,
            help: "Password hashes waiting for a hashing thread.", hashing.queued)
        text.metric("exosphere_hashing_busy", type: .gauge, help: "Hashing threads computing a password hash.", hashing.busy)
        text.metric(
            "exosphere_hashing_rejected_total", type: .counter,
            help: "Password hashes refused because the hashing queue was full (answered with 503).", hashing.rejected)
        text.metric(
            "exosphere_hashing_completed_total", type: .counter,
            help: "Password hashes computed.", hashing.completed)
        text.metric(
            "exosphere_hashing_abandoned_total", type: .counter,
            help: "Password hashes dropped unstarted because their client had gone.", hashing.abandoned)
        text.metric(
            "exosphere_hashing_expired_total", type: .counter,
            help: "Password hashes dropped unstarted because their request's deadline passed (answered with 503).", hashing.expired)
    }

    private static func merge(_ a: HTTPMetrics.Histogram, _ b: HTTPMetrics.Histogram) -> HTTPMetrics.Histogram {
        var merged = a
        merged.count += b.count
        merged.sumSeconds += b.sumSeconds
        merged.buckets = zip(a.buckets, b.buckets).map { $0 + $1 }
        return merged
    }
}

/// The process's own figures, as the standard `process_*` families name them, read from /proc.
///
/// A figure that cannot be read (no /proc) is left out rather than written as a misleading 0.
struct ProcessFigures {
    var residentBytes: Int?
    var cpuSeconds: Double?
    var openFileDescriptors: Int?
    var startTimeSeconds: Double?

    static func read() -> ProcessFigures {
        var figures = ProcessFigures()
        figures.openFileDescriptors = countOpenFileDescriptors()
        guard let stat = readFile("/proc/self/stat") else { return figures }
        // The command name (field 2) is in parentheses and may hold spaces and parentheses itself,
        // so fields are counted from the last ')': field 3 (state) comes first.
        guard let commandEnd = stat.utf8.lastIndex(of: UInt8(ascii: ")")) else { return figures }
        let fields = stat[stat.utf8.index(after: commandEnd)...].split(separator: " ")
        func field(_ number: Int) -> Double? {
            fields.indices.contains(number - 3) ? Double(fields[number - 3]) : nil
        }
        let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))
        if let user = field(14), let system = field(15) {
            figures.cpuSeconds = (user + system) / ticksPerSecond
        }
        if let pages = field(24) {
            figures.residentBytes = Int(pages) * sysconf(Int32(_SC_PAGESIZE))
        }
        if let startTicks = field(22), let bootTime = bootTimeSeconds() {
            figures.startTimeSeconds = bootTime + startTicks / ticksPerSecond
        }
        return figures
    }

    func write(into text: inout PrometheusText) {
        if let residentBytes {
            text.metric("process_resident_memory_bytes", type: .gauge, help: "Resident memory size in bytes.", residentBytes)
        }
        if let cpuSeconds {
            text.metric(
                "process_cpu_seconds_total", type: .counter,
                help: "Total user and system CPU time spent in seconds.", cpuSeconds)
        }
        if let openFileDescriptors {
            text.metric("process_open_fds", type: .gauge, help: "Number of open file descriptors.", openFileDescriptors)
        }
        if let startTimeSeconds {
            text.metric(
                "process_start_time_seconds", type: .gauge,
                help: "Start time of the process since unix epoch in seconds.", startTimeSeconds)
        }
    }

    /// `btime` of /proc/stat: when the system booted, in seconds since the epoch.
    private static func bootTimeSeconds() -> Double? {
        guard let stat = readFile("/proc/stat") else { return nil }
        for line in stat.split(separator: "\n") where line.hasPrefix("btime ") {
            return line.split(separator: " ").last.flatMap { Double($0) }
        }
        return nil
    }

    /// Entries of /proc/self/fd, not counting the descriptor that reads the directory.
    private static func countOpenFileDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        let own = dirfd(directory)
        var count = 0
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let fd = Int32(name), fd != own else { continue }
            count += 1
        }
        return count
    }

    /// The whole of a small /proc file (their size is reported as 0, so it is read to the end).
    private static func readFile(_ path: String) -> String? {
        (try? FileReader.bytes(path, limit: 1 << 20)).map { String(decoding: $0, as: UTF8.self) }
    }
}

extension MetricsController {
    /// The route alone, for a table built to be read, not served.
    init(listing database: PostgresPool) {
        self.init(http: HTTPMetrics(), database: database, hashing: nil, accounts: nil, images: nil, pipelines: nil, mail: nil)
    }
}
