import AWSSignature
import Accounts
import API
import HTTPServer
import Images
import Mail
import ObjectStorage
import Postgres
import StructuredLogging
import Thumbnails
import Cryptography

/// The command line of `exosphere serve` (and `migrate`, `images migrate`): every setting as a
/// flag and an environment variable, read flags over environment over defaults.
extension Configuration {
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
        Option(
            flag: "--host", environment: "HOST", placeholder: "ADDRESS", help: "address to listen on",
            defaultValue: { $0.server.host }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--host/HOST must not be empty") }
            config.server.host = value
        },
        Option(
            flag: "--port", environment: "PORT", placeholder: "PORT", help: "TCP port to listen on (0 picks a free one)",
            defaultValue: { String($0.server.port) }
        ) { config, value throws(ConfigurationError) in
            config.server.port = try integer(value, "--port/PORT", 0...65535)
        },
        Option(
            flag: "--metrics-listen", environment: "EXOSPHERE_METRICS_LISTEN", placeholder: "HOST:PORT",
            help: "serve /metrics on this address only, not with the API (for the operator's network)",
            defaultValue: { $0.metricsListen.map { "\($0.host):\($0.port)" } ?? "(with the API)" }
        ) { config, value throws(ConfigurationError) in
            guard let colon = value.lastIndex(of: ":"), let port = Int(value[value.index(after: colon)...]), (0...65_535).contains(port),
                colon != value.startIndex
            else {
                throw ConfigurationError("--metrics-listen/EXOSPHERE_METRICS_LISTEN: expected HOST:PORT, got '\(shown(value))'")
            }
            var host = String(value[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            config.metricsListen = (host, port)
        },
        Option(
            flag: "--event-loops", environment: "EXOSPHERE_EVENT_LOOPS", placeholder: "N", help: "event-loop threads",
            defaultValue: { String($0.server.eventLoops) }
        ) { config, value throws(ConfigurationError) in
            config.server.eventLoops = try integer(value, "--event-loops", 1...256)
        },
        Option(
            flag: "--worker-threads", environment: "EXOSPHERE_WORKER_THREADS", placeholder: "N",
            help: "threads that run handlers which block", defaultValue: { String($0.server.workerThreads) }
        ) { config, value throws(ConfigurationError) in
            config.server.workerThreads = try integer(value, "--worker-threads", 1...1024)
        },
        Option(
            flag: "--max-connections", environment: "EXOSPHERE_MAX_CONNECTIONS", placeholder: "N",
            help: "open connections beyond which new ones get 503", defaultValue: { String($0.server.maxConnections) }
        ) { config, value throws(ConfigurationError) in
            config.server.maxConnections = try integer(value, "--max-connections", 1...1_000_000)
        },
        Option(
            flag: "--max-connections-per-address", environment: "EXOSPHERE_MAX_CONNECTIONS_PER_ADDRESS", placeholder: "N",
            help: "open connections from one client address beyond which new ones get 503 (0: no limit; trusted proxies are exempt)",
            defaultValue: { String($0.server.maxConnectionsPerAddress) }
        ) { config, value throws(ConfigurationError) in
            config.server.maxConnectionsPerAddress = try integer(value, "--max-connections-per-address", 0...1_000_000)
        },
        Option(
            flag: "--max-buffered-body-bytes", environment: "EXOSPHERE_MAX_BUFFERED_BODY_BYTES", placeholder: "BYTES",
            help: "request body bytes held at once by the whole server; a body past it gets 503",
            defaultValue: { String($0.server.maxBufferedBodyBytes) }
        ) { config, value throws(ConfigurationError) in
            config.server.maxBufferedBodyBytes = try integer(value, "--max-buffered-body-bytes", (1 << 20)...(1 << 40))
        },
        Option(
            flag: "--descriptor-reserve", environment: "EXOSPHERE_DESCRIPTOR_RESERVE", placeholder: "N",
            help:
                "file descriptors kept out of --max-connections for the database, files and logs (the open-file limit is raised to its hard limit at start)",
            defaultValue: { String($0.server.descriptorReserve) }
        ) { config, value throws(ConfigurationError) in
            config.server.descriptorReserve = try integer(value, "--descriptor-reserve", 0...1_000_000)
        },
        Option(
            flag: "--max-body-bytes", environment: "EXOSPHERE_MAX_BODY_BYTES", placeholder: "BYTES",
            help: "default request body limit", defaultValue: { String($0.server.limits.maxBodyBytes) }
        ) { config, value throws(ConfigurationError) in
            config.server.limits.maxBodyBytes = try integer(value, "--max-body-bytes", 0...(1 << 30))
        },
        Option(
            flag: "--header-timeout", environment: "EXOSPHERE_HEADER_TIMEOUT", placeholder: "SECONDS",
            help: "time allowed for a request head", defaultValue: { seconds($0.server.headerTimeout) }
        ) { config, value throws(ConfigurationError) in
            config.server.headerTimeout = .seconds(try integer(value, "--header-timeout", 1...3600))
        },
        Option(
            flag: "--idle-timeout", environment: "EXOSPHERE_IDLE_TIMEOUT", placeholder: "SECONDS",
            help: "keep-alive idle timeout", defaultValue: { seconds($0.server.idleTimeout) }
        ) { config, value throws(ConfigurationError) in
            config.server.idleTimeout = .seconds(try integer(value, "--idle-timeout", 1...3600))
        },
        Option(
            flag: "--request-timeout", environment: "EXOSPHERE_REQUEST_TIMEOUT", placeholder: "SECONDS",
            help:
                "time a request has for its answer: its waits for a worker, the database and a password hash end by then with 503 (keep it below the proxy's timeout)",
            defaultValue: { seconds($0.server.requestDeadline) }
        ) { config, value throws(ConfigurationError) in
            config.server.requestDeadline = .seconds(try integer(value, "--request-timeout", 1...300))
        },
        Option(
            flag: "--drain-timeout", environment: "EXOSPHERE_DRAIN_TIMEOUT", placeholder: "SECONDS",
            help: "how long shutdown waits for in-flight requests", defaultValue: { seconds($0.server.drainTimeout) }
        ) { config, value throws(ConfigurationError) in
            config.server.drainTimeout = .seconds(try integer(value, "--drain-timeout", 0...3600))
        },
        Option(
            flag: "--database-url", environment: "DATABASE_URL", placeholder: "URL",
            help: "PostgreSQL to use; unset runs a managed local cluster", defaultValue: { $0.databaseURL ?? "(managed)" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--database-url/DATABASE_URL must not be empty") }
            do {
                _ = try PostgresConfiguration(connectionString: value)
            } catch {
                throw ConfigurationError("--database-url/DATABASE_URL is not a valid postgres:// URL or libpq connection string")
            }
            config.databaseURL = value
        },
        Option(
            flag: "--data-dir", environment: "EXOSPHERE_DATA_DIR", placeholder: "DIR",
            help: "data directory of the managed PostgreSQL", defaultValue: { $0.dataDirectory }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--data-dir/EXOSPHERE_DATA_DIR must not be empty") }
            config.dataDirectory = value
        },
        Option(
            flag: "--migrations-dir", environment: "EXOSPHERE_MIGRATIONS_DIR", placeholder: "DIR",
            help: "directory of NNNN_name.sql migrations to use instead of the built-in ones",
            defaultValue: { $0.migrationsDirectory ?? "(built in)" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--migrations-dir/EXOSPHERE_MIGRATIONS_DIR must not be empty") }
            config.migrationsDirectory = value
        },
        Option(
            flag: "--db-pool-size", environment: "EXOSPHERE_DB_POOL_SIZE", placeholder: "N",
            help: "database connections", defaultValue: { String($0.databasePoolSize) }
        ) { config, value throws(ConfigurationError) in
            config.databasePoolSize = try integer(value, "--db-pool-size", 1...1000)
        },
        Option(
            flag: "--db-acquire-timeout", environment: "EXOSPHERE_DB_ACQUIRE_TIMEOUT", placeholder: "SECONDS",
            help: "wait for a free connection before 503", defaultValue: { seconds($0.databaseAcquireTimeout) }
        ) { config, value throws(ConfigurationError) in
            config.databaseAcquireTimeout = .seconds(try integer(value, "--db-acquire-timeout", 1...300))
        },
        Option(
            flag: "--db-timeout", environment: "EXOSPHERE_DB_TIMEOUT", placeholder: "SECONDS",
            help: "wait for the database's answer to a statement before 503 (a frozen or unreachable server)",
            defaultValue: { seconds($0.databaseResponseTimeout) }
        ) { config, value throws(ConfigurationError) in
            config.databaseResponseTimeout = .seconds(try integer(value, "--db-timeout", 1...300))
        },
        Option(
            flag: "--db-pipelining", environment: "EXOSPHERE_DB_PIPELINING", placeholder: "on|off",
            help: "answer GET, PUT and PATCH /users/me on the event loops, one pipelined connection each (off: worker pool)",
            defaultValue: { $0.databasePipelining ? "on" : "off" }
        ) { config, value throws(ConfigurationError) in
            config.databasePipelining = try onOff(value, "--db-pipelining/EXOSPHERE_DB_PIPELINING")
        },
        Option(
            flag: "--db-pooler", environment: "EXOSPHERE_DB_POOLER", placeholder: "none|session|transaction",
            help: "the connection pooler in front of PostgreSQL (pgbouncer's pool_mode; statement mode cannot work)",
            defaultValue: { $0.databasePooler.rawValue }
        ) { config, value throws(ConfigurationError) in
            if value == "statement" {
                throw ConfigurationError(
                    "--db-pooler/EXOSPHERE_DB_POOLER: statement mode cannot work (Exosphere runs transactions of several statements); use pool_mode = transaction or session"
                )
            }
            guard let pooler = PostgresConfiguration.Pooler(rawValue: value) else {
                throw ConfigurationError("--db-pooler/EXOSPHERE_DB_POOLER: expected none, session or transaction, got '\(shown(value))'")
            }
            config.databasePooler = pooler
        },
        Option(
            flag: "--session-idle-timeout", environment: "EXOSPHERE_SESSION_IDLE_TIMEOUT", placeholder: "SECONDS",
            help: "a session unused this long ends", defaultValue: { String(Int($0.accounts.lifetime.idleSeconds)) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.lifetime.idleSeconds = Double(try integer(value, "--session-idle-timeout", 60...(10 * 365 * 86_400)))
        },
        Option(
            flag: "--session-lifetime", environment: "EXOSPHERE_SESSION_LIFETIME", placeholder: "SECONDS",
            help: "a session ends this long after sign-in", defaultValue: { String(Int($0.accounts.lifetime.absoluteSeconds)) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.lifetime.absoluteSeconds = Double(try integer(value, "--session-lifetime", 60...(10 * 365 * 86_400)))
        },
        Option(
            flag: "--signin-limit", environment: "EXOSPHERE_SIGNIN_LIMIT", placeholder: "N",
            help: "failed sign-ins per email from one client address (IPv6: /64) in 15 minutes before 429",
            defaultValue: { String($0.accounts.signInPerEmailAndAddress.limit) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.signInPerEmailAndAddress.limit = try integer(value, "--signin-limit", 1...1_000_000)
        },
        Option(
            flag: "--signin-email-limit", environment: "EXOSPHERE_SIGNIN_EMAIL_LIMIT", placeholder: "N",
            help: "failed sign-ins per email from all addresses together in 15 minutes before 429",
            defaultValue: { String($0.accounts.signInPerEmail.limit) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.signInPerEmail.limit = try integer(value, "--signin-email-limit", 1...1_000_000)
        },
        Option(
            flag: "--signin-address-limit", environment: "EXOSPHERE_SIGNIN_ADDRESS_LIMIT", placeholder: "N",
            help: "failed sign-ins per client address (IPv6: /64) in 15 minutes before 429",
            defaultValue: { String($0.accounts.signInPerAddress.limit) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.signInPerAddress.limit = try integer(value, "--signin-address-limit", 1...1_000_000)
        },
        Option(
            flag: "--registration-address-limit", environment: "EXOSPHERE_REGISTRATION_ADDRESS_LIMIT", placeholder: "N",
            help: "registrations per client address (IPv6: /64) in an hour before 429 (0: no limit)",
            defaultValue: { String($0.accounts.registrationsPerAddress.limit) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.registrationsPerAddress.limit = try integer(value, "--registration-address-limit", 0...1_000_000)
        },
        Option(
            flag: "--recent-authentication-seconds", environment: "EXOSPHERE_RECENT_AUTHENTICATION_SECONDS", placeholder: "S",
            help: "how recently a session's holder must have proved a credential to add or remove a way in (passkeys, identities)",
            defaultValue: { String(Int($0.accounts.recentAuthenticationSeconds)) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.recentAuthenticationSeconds = Double(try integer(value, "--recent-authentication-seconds", 10...86_400))
        },
        Option(
            flag: "--id-token-nonce", environment: "EXOSPHERE_ID_TOKEN_NONCE", placeholder: "required|optional",
            help: "whether an Apple or Google ID token must carry a nonce from POST /users/signin/nonce",
            defaultValue: { $0.accounts.idTokenNonceRequired ? "required" : "optional" }
        ) { config, value throws(ConfigurationError) in
            switch value {
            case "required": config.accounts.idTokenNonceRequired = true
            case "optional": config.accounts.idTokenNonceRequired = false
            default: throw ConfigurationError("--id-token-nonce: expected required or optional, got \(value)")
            }
        },
        Option(
            flag: "--guest-address-limit", environment: "EXOSPHERE_GUEST_ADDRESS_LIMIT", placeholder: "N",
            help: "guests (POST /users/guest) made per client address (IPv6: /64) in an hour before 429 (0: no limit)",
            defaultValue: { String($0.accounts.guestsPerAddress.limit) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.guestsPerAddress.limit = try integer(value, "--guest-address-limit", 0...1_000_000)
        },
        Option(
            flag: "--guest-ttl-days", environment: "EXOSPHERE_GUEST_TTL_DAYS", placeholder: "DAYS",
            help: "guests (POST /users/guest) idle this long are deleted with their images (0: kept)",
            defaultValue: { String(Int($0.accounts.guestIdleSeconds / 86_400)) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.guestIdleSeconds = Double(try integer(value, "--guest-ttl-days", 0...3_650)) * 86_400
        },
        Option(
            flag: "--email-code-signup", environment: "EXOSPHERE_EMAIL_CODE_SIGNUP", placeholder: "on|off",
            help: "whether a code mailed to an address no account holds creates the account when it is verified",
            defaultValue: { $0.accounts.emailCodeSignup ? "on" : "off" }
        ) { config, value throws(ConfigurationError) in
            config.accounts.emailCodeSignup = try onOff(value, "--email-code-signup")
        },
        Option(
            flag: "--admin-mfa", environment: "EXOSPHERE_ADMIN_MFA", placeholder: "required|optional",
            help: "whether an administrator must turn a second factor on (the console insists at the next sign-in)",
            defaultValue: { $0.accounts.adminSecondFactorRequired ? "required" : "optional" }
        ) { config, value throws(ConfigurationError) in
            switch value {
            case "required": config.accounts.adminSecondFactorRequired = true
            case "optional": config.accounts.adminSecondFactorRequired = false
            default: throw ConfigurationError("--admin-mfa: expected required or optional, got \(value)")
            }
        },
        Option(
            flag: "--max-streams-per-user", environment: "EXOSPHERE_MAX_STREAMS_PER_USER", placeholder: "N",
            help: "event streams (GET /users/me/events) one user may hold open on an instance at once; 429 beyond",
            defaultValue: { String($0.maxStreamsPerUser) }
        ) { config, value throws(ConfigurationError) in
            config.maxStreamsPerUser = try integer(value, "--max-streams-per-user", 1...1_000)
        },
        Option(
            flag: "--max-sessions-per-user", environment: "EXOSPHERE_MAX_SESSIONS_PER_USER", placeholder: "N",
            help: "sessions a user keeps; a sign-in beyond it ends the oldest",
            defaultValue: { String($0.accounts.maxSessionsPerUser) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.maxSessionsPerUser = try integer(value, "--max-sessions-per-user", 1...100_000)
        },
        Option(
            flag: "--session-cache-mb", environment: "EXOSPHERE_SESSION_CACHE_MB", placeholder: "MB",
            help: "memory for sessions and profiles read without the database (revocation still immediate); 0 turns it off",
            defaultValue: { String($0.accounts.sessionCacheBytes >> 20) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.sessionCacheBytes = try integer(value, "--session-cache-mb", 0...65_536) << 20
        },
        Option(
            flag: "--field-name-limit", environment: "EXOSPHERE_FIELD_NAME_LIMIT", placeholder: "N",
            help: "custom field names the deployment may have (beyond it 422 field_limit_reached)",
            defaultValue: { String($0.accounts.fieldLimits.maxFieldNames) }
        ) { config, value throws(ConfigurationError) in
            config.accounts.fieldLimits.maxFieldNames = try integer(value, "--field-name-limit", 1...1_000_000)
        },
        Option(
            flag: "--lock-schema", environment: "EXOSPHERE_LOCK_SCHEMA", placeholder: "on|off",
            help: "only the fields --field-config pins may be written (422 unknown_field for others)",
            defaultValue: { $0.accounts.fieldLimits.schemaLocked ? "on" : "off" }
        ) { config, value throws(ConfigurationError) in
            config.accounts.fieldLimits.schemaLocked = try onOff(value, "--lock-schema/EXOSPHERE_LOCK_SCHEMA")
        },
        Option(
            flag: "--trusted-proxies", environment: "EXOSPHERE_TRUSTED_PROXIES", placeholder: "ADDRESSES",
            help: "comma-separated IPs of proxies whose X-Forwarded-For names the client",
            defaultValue: { $0.trustedProxies.isEmpty ? "(none)" : $0.trustedProxies.sorted().joined(separator: ",") }
        ) { config, value throws(ConfigurationError) in
            var proxies: Set<String> = []
            for item in value.split(separator: ",") {
                let text = ClientAddress.trimmed(item)
                if text.isEmpty { continue }
                guard let address = ClientAddress.canonical(text) else {
                    throw ConfigurationError("--trusted-proxies/EXOSPHERE_TRUSTED_PROXIES: '\(shown(String(item)))' is not an IPv4 or IPv6 address")
                }
                proxies.insert(address)
            }
            config.trustedProxies = proxies
        },
        Option(
            flag: "--scrypt-ln", environment: "EXOSPHERE_SCRYPT_LN", placeholder: "LOG2N",
            help: "scrypt cost: log2 of N (14 with p=5; OWASP's equivalents 17/p=1, 16/p=2, 15/p=3, 13/p=10)",
            defaultValue: { String($0.passwordHashing.logN) }
        ) { config, value throws(ConfigurationError) in
            config.passwordHashing = try scrypt(logN: integer(value, "--scrypt-ln", 13...20), config.passwordHashing.r, config.passwordHashing.p)
        },
        Option(
            flag: "--scrypt-r", environment: "EXOSPHERE_SCRYPT_R", placeholder: "R",
            help: "scrypt block size (at least 8)", defaultValue: { String($0.passwordHashing.r) }
        ) { config, value throws(ConfigurationError) in
            config.passwordHashing = try scrypt(logN: config.passwordHashing.logN, integer(value, "--scrypt-r", 8...32), config.passwordHashing.p)
        },
        Option(
            flag: "--scrypt-p", environment: "EXOSPHERE_SCRYPT_P", placeholder: "P",
            help: "scrypt parallelism (at least 1)", defaultValue: { String($0.passwordHashing.p) }
        ) { config, value throws(ConfigurationError) in
            config.passwordHashing = try scrypt(logN: config.passwordHashing.logN, config.passwordHashing.r, integer(value, "--scrypt-p", 1...16))
        },
        Option(
            flag: "--hashing-threads", environment: "EXOSPHERE_HASHING_THREADS", placeholder: "N",
            help: "threads that hash passwords", defaultValue: { String($0.hashingThreads) }
        ) { config, value throws(ConfigurationError) in
            config.hashingThreads = try integer(value, "--hashing-threads", 1...64)
        },
        Option(
            flag: "--hashing-queue", environment: "EXOSPHERE_HASHING_QUEUE", placeholder: "N",
            help: "hashes that may wait before 503", defaultValue: { String($0.hashingQueue) }
        ) { config, value throws(ConfigurationError) in
            config.hashingQueue = try integer(value, "--hashing-queue", 0...10_000)
        },
        Option(
            flag: "--hashing-priority", environment: "EXOSPHERE_HASHING_PRIORITY", placeholder: "CLASS",
            help: "idle: hashing yields to all other work; normal: an equal share", defaultValue: { $0.hashingPriority.rawValue }
        ) { config, value throws(ConfigurationError) in
            guard let priority = HashingPool.Priority(rawValue: value) else {
                throw ConfigurationError("--hashing-priority/EXOSPHERE_HASHING_PRIORITY: expected idle or normal, got '\(shown(value))'")
            }
            config.hashingPriority = priority
        },
        Option(
            flag: "--events-heartbeat", environment: "EXOSPHERE_EVENTS_HEARTBEAT", placeholder: "SECONDS",
            help: "a comment on a quiet event stream this often (under the proxies' idle timeouts)",
            defaultValue: { seconds($0.liveEvents.heartbeat) }
        ) { config, value throws(ConfigurationError) in
            // Under the server's write timeout (60 s), which holds while a stream waits for its next bytes.
            config.liveEvents.heartbeat = .seconds(try integer(value, "--events-heartbeat", 1...50))
        },
        Option(
            flag: "--field-config", environment: "EXOSPHERE_FIELD_CONFIG", placeholder: "FILE",
            help: "JSON file pinning custom field types", defaultValue: { $0.fieldConfigPath ?? "(none)" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--field-config/EXOSPHERE_FIELD_CONFIG must not be empty") }
            config.fieldConfigPath = value
        },
        Option(
            flag: "--image-storage", environment: "EXOSPHERE_IMAGE_STORAGE", placeholder: "KIND",
            help: "where new images go: database, filesystem or s3", defaultValue: { $0.images.storage.rawValue }
        ) { config, value throws(ConfigurationError) in
            guard let storage = ImageStorage(rawValue: value) else {
                throw ConfigurationError("--image-storage/EXOSPHERE_IMAGE_STORAGE: expected database, filesystem or s3, got '\(shown(value))'")
            }
            config.images.storage = storage
        },
        Option(
            flag: "--s3-endpoint", environment: "EXOSPHERE_S3_ENDPOINT", placeholder: "URL",
            help: "the object store of the s3 image storage: https://host[:port], or http:// to loopback",
            defaultValue: { $0.images.s3?.endpoint ?? "(none)" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--s3-endpoint/EXOSPHERE_S3_ENDPOINT must not be empty") }
            config.s3 { $0.endpoint = value }
        },
        Option(
            flag: "--s3-ca-file", environment: "EXOSPHERE_S3_CA_FILE", placeholder: "FILE",
            help: "trust this CA (PEM) for the object store's certificate instead of the system's",
            defaultValue: { $0.images.s3?.caFile ?? "(system trust store)" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--s3-ca-file/EXOSPHERE_S3_CA_FILE must not be empty") }
            config.s3 { $0.caFile = value }
        },
        Option(
            flag: "--s3-bucket", environment: "EXOSPHERE_S3_BUCKET", placeholder: "NAME", help: "the bucket of the s3 image storage",
            defaultValue: { $0.images.s3?.bucket ?? "(none)" }
        ) { config, value throws(ConfigurationError) in
            guard S3Configuration.isValidBucketName(value) else {
                throw ConfigurationError("--s3-bucket/EXOSPHERE_S3_BUCKET: '\(shown(value))' is not a bucket name")
            }
            config.s3 { $0.bucket = value }
        },
        Option(
            flag: "--s3-region", environment: "EXOSPHERE_S3_REGION", placeholder: "REGION", help: "the region requests are signed for",
            defaultValue: { $0.images.s3?.region ?? "us-east-1" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--s3-region/EXOSPHERE_S3_REGION must not be empty") }
            config.s3 { $0.region = value }
        },
        Option(
            flag: "--s3-path-style", environment: "EXOSPHERE_S3_PATH_STYLE", placeholder: "on|off",
            help: "address the bucket as /bucket/key (Ceph, MinIO) rather than bucket.host/key",
            defaultValue: { $0.images.s3?.pathStyle == true ? "on" : "off" }
        ) { config, value throws(ConfigurationError) in
            let on = try onOff(value, "--s3-path-style/EXOSPHERE_S3_PATH_STYLE")
            config.s3 { $0.pathStyle = on }
        },
        Option(
            flag: "--s3-prefix", environment: "EXOSPHERE_S3_PREFIX", placeholder: "PREFIX", help: "put before every object key (such as images/)",
            defaultValue: { $0.images.s3Prefix.isEmpty ? "(none)" : $0.images.s3Prefix }
        ) { config, value throws(ConfigurationError) in
            guard value.utf8.count <= 512, !value.hasPrefix("/") else {
                throw ConfigurationError("--s3-prefix/EXOSPHERE_S3_PREFIX: at most 512 bytes, not starting with /")
            }
            config.images.s3Prefix = value
        },
        Option(
            flag: "--s3-redirect", environment: "EXOSPHERE_S3_REDIRECT", placeholder: "on|off",
            help: "signed image URLs answer 302 to a presigned GET on the store",
            defaultValue: { $0.images.s3Redirect ? "on" : "off" }
        ) { config, value throws(ConfigurationError) in
            config.images.s3Redirect = try onOff(value, "--s3-redirect/EXOSPHERE_S3_REDIRECT")
        },
        Option(
            flag: "--s3-orphan-grace", environment: "EXOSPHERE_S3_ORPHAN_GRACE", placeholder: "SECONDS",
            help: "objects no image names are removed once older than this (an upload's row may still be coming)",
            defaultValue: { String($0.images.orphanObjectGraceSeconds) }
        ) { config, value throws(ConfigurationError) in
            config.images.orphanObjectGraceSeconds = try integer(value, "--s3-orphan-grace", 0...604_800)
        },
        Option(
            flag: "--image-dir", environment: "EXOSPHERE_IMAGE_DIR", placeholder: "DIR",
            help: "directory of the filesystem image storage", defaultValue: { $0.images.directory }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--image-dir/EXOSPHERE_IMAGE_DIR must not be empty") }
            config.images.directory = value
        },
        Option(
            flag: "--image-max-bytes", environment: "EXOSPHERE_IMAGE_MAX_BYTES", placeholder: "BYTES",
            help: "largest image upload", defaultValue: { String($0.images.maxBytes) }
        ) { config, value throws(ConfigurationError) in
            config.images.maxBytes = try integer(value, "--image-max-bytes", 1...(1 << 30))
        },
        Option(
            flag: "--upload-rate", environment: "EXOSPHERE_UPLOAD_RATE", placeholder: "N",
            help: "image uploads one user may make in an hour (0: no limit)", defaultValue: { String($0.images.uploadsPerHour) }
        ) { config, value throws(ConfigurationError) in
            config.images.uploadsPerHour = try integer(value, "--upload-rate", 0...1_000_000)
        },
        Option(
            flag: "--image-quota-bytes", environment: "EXOSPHERE_IMAGE_QUOTA_BYTES", placeholder: "BYTES",
            help: "bytes of images one user may keep (0: no limit)", defaultValue: { String($0.images.quotaBytes) }
        ) { config, value throws(ConfigurationError) in
            config.images.quotaBytes = try integer(value, "--image-quota-bytes", 0...(1 << 50))
        },
        Option(
            flag: "--signed-url-seconds", environment: "EXOSPHERE_SIGNED_URL_SECONDS", placeholder: "SECONDS",
            help: "how long an image's signedUrl works (at most a week)", defaultValue: { String($0.signedURLSeconds) }
        ) { config, value throws(ConfigurationError) in
            config.signedURLSeconds = try integer(value, "--signed-url-seconds", 60...URLSigner.maxLifetimeSeconds)
        },
        Option(
            flag: "--thumbnail-helpers", environment: "EXOSPHERE_THUMBNAIL_HELPERS", placeholder: "N",
            help: "helper processes that decode images for thumbnails (0: no thumbnails)",
            defaultValue: { String($0.thumbnails.helpers) }
        ) { config, value throws(ConfigurationError) in
            config.thumbnails.helpers = try integer(value, "--thumbnail-helpers", 0...64)
        },
        Option(
            flag: "--thumbnail-timeout", environment: "EXOSPHERE_THUMBNAIL_TIMEOUT", placeholder: "SECONDS",
            help: "wall-clock deadline to decode one image (and to wait for a free helper)",
            defaultValue: { "\($0.thumbnails.deadlineSeconds)" }
        ) { config, value throws(ConfigurationError) in
            guard let seconds = Double(value), seconds >= 0.05, seconds <= 600 else {
                throw ConfigurationError("--thumbnail-timeout/EXOSPHERE_THUMBNAIL_TIMEOUT: expected seconds from 0.05 to 600, got '\(shown(value))'")
            }
            config.thumbnails.deadlineSeconds = seconds
        },
        Option(
            flag: "--thumbnail-cpu-seconds", environment: "EXOSPHERE_THUMBNAIL_CPU_SECONDS", placeholder: "SECONDS",
            help: "CPU time a helper may spend on one image before the kernel stops it",
            defaultValue: { String($0.thumbnails.cpuSeconds) }
        ) { config, value throws(ConfigurationError) in
            config.thumbnails.cpuSeconds = try integer(value, "--thumbnail-cpu-seconds", 1...600)
        },
        Option(
            flag: "--thumbnail-memory-mb", environment: "EXOSPHERE_THUMBNAIL_MEMORY_MB", placeholder: "MIB",
            help: "address space of each thumbnail helper", defaultValue: { String($0.thumbnails.memoryLimitMB) }
        ) { config, value throws(ConfigurationError) in
            config.thumbnails.memoryLimitMB = try integer(value, "--thumbnail-memory-mb", 128...65_536)
        },
        Option(
            flag: "--thumbnail-isolation", environment: "EXOSPHERE_THUMBNAIL_ISOLATION", placeholder: "required|best-effort|off",
            help: "whether thumbnail helpers must hide the server's files (required: refuse to start where they cannot)",
            defaultValue: { $0.thumbnails.isolation.rawValue }
        ) { config, value throws(ConfigurationError) in
            guard let isolation = ThumbnailerPool.Isolation(rawValue: value) else {
                throw ConfigurationError(
                    "--thumbnail-isolation/EXOSPHERE_THUMBNAIL_ISOLATION: expected required, best-effort or off, got '\(shown(value))'")
            }
            config.thumbnails.isolation = isolation
        },
        Option(
            flag: "--thumbnail-cache-mb", environment: "EXOSPHERE_THUMBNAIL_CACHE_MB", placeholder: "MIB",
            help: "memory that keeps recently served thumbnails", defaultValue: { String($0.images.thumbnailCacheBytes >> 20) }
        ) { config, value throws(ConfigurationError) in
            config.images.thumbnailCacheBytes = try integer(value, "--thumbnail-cache-mb", 0...65_536) << 20
        },
        Option(
            flag: "--access-log", environment: "EXOSPHERE_ACCESS_LOG", placeholder: "on|off",
            help: "one log line per request", defaultValue: { $0.server.accessLog ? "on" : "off" }
        ) { config, value throws(ConfigurationError) in
            config.server.accessLog = try onOff(value, "--access-log/EXOSPHERE_ACCESS_LOG")
        },
        Option(
            flag: "--public-url", environment: "EXOSPHERE_PUBLIC_URL", placeholder: "URL",
            help: "the base of links in mail (default http://localhost:PORT)", defaultValue: { $0.publicURL ?? "(none)" }
        ) { config, value throws(ConfigurationError) in
            guard value.hasPrefix("https://") || value.hasPrefix("http://"), !value.contains("#"), !value.contains("?") else {
                throw ConfigurationError(
                    "--public-url/EXOSPHERE_PUBLIC_URL: expected an http(s) URL without query or fragment, got '\(shown(value))'")
            }
            config.publicURL = value
        },
        Option(
            flag: "--app-name", environment: "EXOSPHERE_APP_NAME", placeholder: "NAME",
            help: "the app's name in mail", defaultValue: { $0.mail.appName }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty, value.count <= 100, !value.contains(where: \.isNewline) else {
                throw ConfigurationError("--app-name/EXOSPHERE_APP_NAME: one line of 1 to 100 characters")
            }
            config.mail.appName = value
        },
        Option(
            flag: "--mail-from", environment: "EXOSPHERE_MAIL_FROM", placeholder: "ADDRESS",
            help: "the sender of mail, 'Name <address>' (default: the app's name, no-reply@ the public URL's host)",
            defaultValue: { $0.mailFrom.map { $0.displayName.map { "\($0) <" } ?? "" + $0.address } ?? "(derived)" }
        ) { config, value throws(ConfigurationError) in
            guard let address = MailAddress(parsing: value) else {
                throw ConfigurationError("--mail-from/EXOSPHERE_MAIL_FROM: expected 'Name <address>' or an address, got '\(shown(value))'")
            }
            config.mailFrom = address
        },
        Option(
            flag: "--mail-dir", environment: "EXOSPHERE_MAIL_DIR", placeholder: "DIR",
            help: "the dev mailbox: where mail is written as .eml files without --smtp-url", defaultValue: { _ in "./.exosphere/mail" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--mail-dir/EXOSPHERE_MAIL_DIR must not be empty") }
            if case .mailbox = config.mail.transport { config.mail.transport = .mailbox(directory: value) }
        },
        Option(
            flag: "--smtp-url", environment: "EXOSPHERE_SMTP_URL", placeholder: "URL",
            help: "the mail relay: smtps://user:password@host[:465], smtp://… (STARTTLS, port 587) or smtp+plain://… (no TLS)",
            defaultValue: { config in
                if case .smtp(let smtp) = config.mail.transport { return smtp.description }
                return "(none: the dev mailbox)"
            }
        ) { config, value throws(ConfigurationError) in
            do {
                config.mail.transport = .smtp(try SMTPConfiguration(url: value))
            } catch {
                throw ConfigurationError("--smtp-url/EXOSPHERE_SMTP_URL: \(error)")
            }
        },
        Option(
            flag: "--smtp-ca-file", environment: "EXOSPHERE_SMTP_CA_FILE", placeholder: "FILE",
            help: "PEM certificates to trust for the relay instead of the system's", defaultValue: { _ in "(the system's)" }
        ) { config, value throws(ConfigurationError) in
            guard case .smtp(var smtp) = config.mail.transport else { throw ConfigurationError("--smtp-ca-file needs --smtp-url") }
            smtp.caFile = value
            config.mail.transport = .smtp(smtp)
        },
        Option(
            flag: "--mail-retry-seconds", environment: "EXOSPHERE_MAIL_RETRY_SECONDS", placeholder: "SECONDS",
            help: "the first delay before a mail the relay did not take is tried again (doubling, up to an hour)",
            defaultValue: { String($0.mail.retryBaseSeconds) }
        ) { config, value throws(ConfigurationError) in
            guard let delay = Double(value), delay.isFinite, (0.01...3_600).contains(delay) else {
                throw ConfigurationError("--mail-retry-seconds/EXOSPHERE_MAIL_RETRY_SECONDS: expected seconds in 0.01...3600, got '\(shown(value))'")
            }
            config.mail.retryBaseSeconds = delay
        },
        Option(
            flag: "--mail-lease-seconds", environment: "EXOSPHERE_MAIL_LEASE_SECONDS", placeholder: "SECONDS",
            help: "how long a mail claimed by an instance that died is left before another sends it",
            defaultValue: { String($0.mail.leaseSeconds) }
        ) { config, value throws(ConfigurationError) in
            guard let lease = Double(value), lease.isFinite, (1...3_600).contains(lease) else {
                throw ConfigurationError("--mail-lease-seconds/EXOSPHERE_MAIL_LEASE_SECONDS: expected seconds in 1...3600, got '\(shown(value))'")
            }
            config.mail.leaseSeconds = lease
        },
        Option(
            flag: "--mail-templates", environment: "EXOSPHERE_MAIL_TEMPLATES", placeholder: "DIR",
            help: "a directory of mail templates replacing the built-in ones", defaultValue: { $0.mailTemplatesDirectory ?? "(built in)" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--mail-templates/EXOSPHERE_MAIL_TEMPLATES must not be empty") }
            config.mailTemplatesDirectory = value
        },
        Option(
            flag: "--apple-app-ids", environment: "EXOSPHERE_APPLE_APP_IDS", placeholder: "IDS",
            help: "TEAMID.bundle.id,… served in /.well-known/apple-app-site-association", defaultValue: { _ in "(none)" }
        ) { config, value throws(ConfigurationError) in
            let ids = value.split(separator: ",").map { String($0.filter { $0 != " " }) }
            guard !ids.isEmpty, ids.allSatisfy({ $0.contains(".") && !$0.contains(where: { $0 == " " || $0 == "\"" }) }) else {
                throw ConfigurationError("--apple-app-ids/EXOSPHERE_APPLE_APP_IDS: expected TEAMID.bundle.id[,…], got '\(shown(value))'")
            }
            config.appLinks.appleAppIDs = ids
        },
        Option(
            flag: "--android-package", environment: "EXOSPHERE_ANDROID_PACKAGE", placeholder: "NAME",
            help: "the Android app served in /.well-known/assetlinks.json", defaultValue: { $0.appLinks.androidPackage ?? "(none)" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty, value.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "." || $0 == "_" }) else {
                throw ConfigurationError("--android-package/EXOSPHERE_ANDROID_PACKAGE: expected a package name, got '\(shown(value))'")
            }
            config.appLinks.androidPackage = value
        },
        Option(
            flag: "--android-cert-sha256", environment: "EXOSPHERE_ANDROID_CERT_SHA256", placeholder: "FINGERPRINTS",
            help: "the Android app's signing certificate SHA-256 fingerprints (AA:BB:…), comma-separated", defaultValue: { _ in "(none)" }
        ) { config, value throws(ConfigurationError) in
            let prints = value.split(separator: ",").map { String($0.filter { $0 != " " }).uppercased() }
            guard !prints.isEmpty, prints.allSatisfy({ $0.count == 95 && $0.allSatisfy { $0 == ":" || $0.isHexDigit } }) else {
                throw ConfigurationError("--android-cert-sha256/EXOSPHERE_ANDROID_CERT_SHA256: expected AA:BB:… (32 bytes), got '\(shown(value))'")
            }
            config.appLinks.androidCertificateFingerprints = prints
        },
        identityClientIDs(.apple, "--apple-client-ids", "EXOSPHERE_APPLE_CLIENT_IDS", "the app's bundle ids and Services ids"),
        identityClientIDs(.google, "--google-client-ids", "EXOSPHERE_GOOGLE_CLIENT_IDS", "the app's OAuth client ids"),
        identityKeySetURL(.apple, "--apple-jwks-url", "EXOSPHERE_APPLE_JWKS_URL"),
        identityKeySetURL(.google, "--google-jwks-url", "EXOSPHERE_GOOGLE_JWKS_URL"),
        Option(
            flag: "--webauthn-rp-id", environment: "EXOSPHERE_WEBAUTHN_RP_ID", placeholder: "DOMAIN",
            help: "the domain passkeys are made for (default: the public URL's host)", defaultValue: { $0.webAuthn.rpID ?? "(the public URL's host)" }
        ) { config, value throws(ConfigurationError) in
            let labels = value.split(separator: ".", omittingEmptySubsequences: false)
            guard !value.isEmpty, value.utf8.count <= 253, value == value.lowercased(),
                labels.allSatisfy({ !$0.isEmpty && $0.count <= 63 && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } })
            else { throw ConfigurationError("--webauthn-rp-id/EXOSPHERE_WEBAUTHN_RP_ID: expected a lowercase domain name, got '\(shown(value))'") }
            config.webAuthn.rpID = value
        },
        Option(
            flag: "--webauthn-origins", environment: "EXOSPHERE_WEBAUTHN_ORIGINS", placeholder: "ORIGINS",
            help:
                "where passkey ceremonies may come from, comma-separated: https://host[:port], android:apk-key-hash:… (default: the public URL's origin)",
            defaultValue: { $0.webAuthn.origins.isEmpty ? "(the public URL's origin)" : $0.webAuthn.origins.joined(separator: ",") }
        ) { config, value throws(ConfigurationError) in
            let origins = value.split(separator: ",").map { String($0.filter { $0 != " " }) }.filter { !$0.isEmpty }
            let wellFormed = origins.allSatisfy { origin in
                origin.hasPrefix("android:apk-key-hash:")
                    || ((origin.hasPrefix("https://") || origin.hasPrefix("http://")) && !origin.dropFirst(8).contains("/"))
            }
            guard !origins.isEmpty, wellFormed else {
                throw ConfigurationError(
                    "--webauthn-origins/EXOSPHERE_WEBAUTHN_ORIGINS: expected origins (scheme://host[:port], no path), got '\(shown(value))'")
            }
            config.webAuthn.origins = origins
        },
        Option(
            flag: "--identity-ca-file", environment: "EXOSPHERE_IDENTITY_CA_FILE", placeholder: "FILE",
            help: "PEM certificates to trust for the providers' key sets instead of the system's", defaultValue: { _ in "(the system's)" }
        ) { config, value throws(ConfigurationError) in
            guard !value.isEmpty else { throw ConfigurationError("--identity-ca-file/EXOSPHERE_IDENTITY_CA_FILE must not be empty") }
            config.identityProviders.apple.caFile = value
            config.identityProviders.google.caFile = value
        },
        Option(
            flag: "--log-level", environment: "LOG_LEVEL", placeholder: "LEVEL",
            help: "trace, debug, info, notice, warning, error or critical", defaultValue: { $0.logLevel.description }
        ) { config, value throws(ConfigurationError) in
            guard let level = Logger.Level(name: value) else { throw ConfigurationError("--log-level/LOG_LEVEL: unknown level '\(shown(value))'") }
            config.logLevel = level
        },
        Option(
            flag: "--log-format", environment: "LOG_FORMAT", placeholder: "FORMAT", help: "json or logfmt",
            defaultValue: { $0.logFormat.rawValue }
        ) { config, value throws(ConfigurationError) in
            guard let format = Logger.Format(rawValue: value) else {
                throw ConfigurationError("--log-format/LOG_FORMAT: expected json or logfmt, got '\(shown(value))'")
            }
            config.logFormat = format
        },
    ]

    /// Reads flags (`--port 8080` or `--port=8080`) over environment variables over defaults.
    /// Every problem is reported, one line each, not just the first.
    static func parse(arguments: [String], environment: [String: String]) throws(ConfigurationError) -> Configuration {
        var configuration = Configuration()
        var problems: [String] = []
        func apply(_ option: Option, _ value: String) {
            do {
                try option.apply(&configuration, value)
            } catch {
                problems.append(error.description)
            }
        }
        // A flag overrides its variable, so a variable is not even read when its flag is given.
        let flagsGiven = Set(arguments.filter { $0.hasPrefix("--") }.map { splitFlag($0).0 })
        for option in options where !flagsGiven.contains(option.flag) {
            if let value = environment[option.environment], !value.isEmpty || option.flag != "--database-url" {
                apply(option, value)
            }
        }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let (flag, inlineValue) = splitFlag(argument)
            index += 1
            guard let option = options.first(where: { $0.flag == flag }) else {
                problems.append("unknown option '\(shown(argument))' (see exosphere serve --help)")
                // Its value, if it looks like one, is not a second problem.
                if inlineValue == nil, argument.hasPrefix("-"), index < arguments.count, !arguments[index].hasPrefix("-") { index += 1 }
                continue
            }
            if let inlineValue {
                apply(option, inlineValue)
            } else if option.placeholder == "on|off", index == arguments.count || arguments[index].hasPrefix("--") {
                // A switch given bare (`--s3-path-style`, last or before another flag) is on.
                apply(option, "on")
            } else if index < arguments.count {
                apply(option, arguments[index])
                index += 1
            } else {
                problems.append("\(flag) needs a value")
            }
        }
        if !configuration.passwordHashing.isAtLeastOWASP {
            let floors = ScryptParameters.owaspConfigurations.map(\.description).joined(separator: "; ")
            problems.append("scrypt \(configuration.passwordHashing) is below OWASP's minimum (reach one of: \(floors))")
        }
        problems += checkObjectStore(&configuration, environment)
        guard problems.isEmpty else { throw ConfigurationError(problems) }
        return configuration
    }

    /// The s3 storage's settings whole: credentials only from `AWS_ACCESS_KEY_ID` and
    /// `AWS_SECRET_ACCESS_KEY` (never a flag), and a client that can work with them.
    private static func checkObjectStore(_ configuration: inout Configuration, _ environment: [String: String]) -> [String] {
        guard var s3 = configuration.images.s3 else {
            return configuration.images.storage == .s3 ? ["--image-storage s3 needs --s3-endpoint and --s3-bucket"] : []
        }
        guard let credentials = AWSCredentials(environment: environment) else {
            return ["the s3 image storage needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment"]
        }
        s3.credentials = credentials
        configuration.images.s3 = s3
        do throws(S3Error) {
            _ = try S3Client(s3)
        } catch {
            return ["--s3-*: \(error.detail)"]
        }
        return []
    }

    /// Changes the s3 storage's settings, made empty at their first change.
    fileprivate mutating func s3(_ change: (inout S3Configuration) -> Void) {
        var s3 = images.s3 ?? S3Configuration(endpoint: "", bucket: "", credentials: AWSCredentials(accessKeyID: "", secretAccessKey: ""))
        change(&s3)
        images.s3 = s3
    }

    /// The `serve --help` text: every option with its variable and default.
    static var help: String {
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

    /// `--apple-client-ids`, `--google-client-ids`: the audiences a provider's tokens must name; none turns it off.
    private static func identityClientIDs(_ provider: IdentityProvider, _ flag: String, _ environment: String, _ what: String) -> Option {
        Option(
            flag: flag, environment: environment, placeholder: "IDS",
            help: "\(what), comma-separated: turns \(provider.displayName) on (POST /users/signin/\(provider.rawValue))",
            defaultValue: {
                $0.identityProviders[provider].clientIDs.isEmpty ? "(none: off)" : $0.identityProviders[provider].clientIDs.joined(separator: ",")
            }
        ) { config, value throws(ConfigurationError) in
            let ids = value.split(separator: ",").map { String($0.filter { $0 != " " }) }.filter { !$0.isEmpty }
            guard !ids.isEmpty, ids.allSatisfy({ $0.utf8.count <= 255 && $0.utf8.allSatisfy { (0x21...0x7E).contains($0) } }) else {
                throw ConfigurationError("\(flag)/\(environment): expected client ids separated by commas, got '\(shown(value))'")
            }
            config.identityProviders[provider].clientIDs = ids
        }
    }

    private static func identityKeySetURL(_ provider: IdentityProvider, _ flag: String, _ environment: String) -> Option {
        Option(
            flag: flag, environment: environment, placeholder: "URL",
            help: "where \(provider.displayName)'s signing keys (JWKS) are fetched", defaultValue: { $0.identityProviders[provider].keySetURL }
        ) { config, value throws(ConfigurationError) in
            if let problem = IdentityProviderConfiguration.problem(keySetURL: value) {
                throw ConfigurationError("\(flag)/\(environment): \(problem)")
            }
            config.identityProviders[provider].keySetURL = value
        }
    }

    private static func integer(_ value: String, _ name: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let number = Int(value), range.contains(number) else {
            throw ConfigurationError("\(name): expected an integer in \(range.lowerBound)...\(range.upperBound), got '\(shown(value))'")
        }
        return number
    }

    private static func onOff(_ value: String, _ name: String) throws(ConfigurationError) -> Bool {
        switch value {
        case "on", "true", "1": return true
        case "off", "false", "0": return false
        default: throw ConfigurationError("\(name): expected on or off, got '\(shown(value))'")
        }
    }

    private static func seconds(_ duration: Duration) -> String { String(duration.components.seconds) }

    private static func scrypt(logN: Int, _ r: Int, _ p: Int) throws(ConfigurationError) -> ScryptParameters {
        do {
            return try ScryptParameters(logN: logN, r: r, p: p)
        } catch {
            throw ConfigurationError("scrypt parameters ln=\(logN), r=\(r), p=\(p) are out of bounds")
        }
    }

    /// A user's value as it appears in an error: control characters escaped, so the message stays one line.
    private static func shown(_ value: String) -> String {
        var text = ""
        for scalar in value.unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F { text += scalar.escaped(asASCII: true) } else { text.unicodeScalars.append(scalar) }
        }
        return text
    }
}

extension String {
    fileprivate func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
