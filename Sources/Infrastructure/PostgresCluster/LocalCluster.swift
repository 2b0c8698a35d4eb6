import CLibPQ
import Files
import Glibc
import Postgres
import Synchronization

/// A PostgreSQL server that this process creates and runs on a unix socket only: for development
/// (`start()`, data kept in `./.exosphere/postgres`) and for tests (`startTemporary()`).
///
///     let cluster = try LocalCluster.startTemporary()
///     defer { cluster.stop() }
///     let pool = PostgresPool(configuration: try cluster.configuration())
///
/// As root, the data and socket directories are given to the `postgres` system user and every
/// server command runs through `setpriv`, because initdb and postgres refuse to run as root.
/// A watchdog shell (one `sh` per server) stops the server if this process dies without
/// stopping it; at normal exit an atexit handler stops every cluster still running.
public final class LocalCluster: Sendable {
    /// How to stop the server.
    public enum ShutdownMode: Sendable {
        /// SIGTERM: waits for clients to disconnect.
        case smart
        /// SIGINT: disconnects clients, then shuts down cleanly.
        case fast
        /// SIGQUIT: exits at once; the next start runs crash recovery (like `pg_ctl stop -m immediate`).
        case immediate
    }

    /// Settings for a cluster.
    public struct Options: Sendable {
        /// The database created on first start and named in `connectionString`.
        public var database = "exosphere"
        /// The superuser created by initdb.
        public var user = "exosphere"
        /// Extra server settings, passed as `-c name=value`.
        public var settings: [String: String] = [:]
        /// How long to wait for the server to accept connections.
        public var startTimeout: Duration = .seconds(60)
        /// The system account that runs the server when this process is root.
        public var systemUser = "postgres"
        public init() {}
    }

    /// The data directory (absolute).
    public let dataDirectory: String
    /// The directory holding the server's unix socket (short, under /tmp).
    public let socketDirectory: String
    /// The libpq connection string of the cluster's database (keyword form).
    public let connectionString: String
    /// The database and user names.
    public let database: String
    public let user: String
    /// True for a throwaway cluster removed by `stop()`.
    public let isTemporary: Bool

    let binDirectory: String
    let options: Options
    /// The directory removed on stop (temporary mode: it holds the data and the socket).
    let ownedDirectory: String
    let runAs: RunAs?
    let state = Mutex(ServerState())

    struct RunAs: Sendable {
        var name: String
        var uid: uid_t
        var gid: gid_t
        var setpriv: String
    }

    struct ServerState: Sendable {
        var serverPID: pid_t = 0
        var watchdogPID: pid_t = 0
        var watchdogWriteEnd: Int32 = -1
        var stopped = false
    }

    static let port = 5432

    /// Starts (creating it on first run) a persistent cluster in `dataDirectory`.
    public static func start(dataDirectory: String = "./.exosphere/postgres", options: Options = Options()) throws -> LocalCluster {
        let cluster = try LocalCluster(dataDirectory: absolutePath(dataDirectory), temporary: false, options: options)
        try cluster.bootstrap()
        return cluster
    }

    /// A server already running on `dataDirectory`, started by another process (a running
    /// `exosphere serve`): its `postmaster.pid` names its socket directory and port. Nil when no
    /// server holds the directory; an error when one holds it but does not accept connections
    /// (starting or stopping), since starting a second one there would fail anyway.
    public static func running(dataDirectory: String, options: Options = Options()) throws -> RunningServer? {
        let directory = absolutePath(dataDirectory)
        guard let text = try? FileReader.text(directory + "/postmaster.pid", limit: 4096) else { return nil }
        guard let server = RunningServer(postmasterPID: text, database: options.database, user: options.user) else {
            throw PostgresError(code: .clusterFailed, context: "\(directory)/postmaster.pid is not a PostgreSQL lock file")
        }
        // A lock file left by a server that died: the next start removes it.
        guard kill(server.pid, 0) == 0 || errno == EPERM else { return nil }
        guard PQping(server.connectionString + " connect_timeout=2") == PQPING_OK else {
            throw PostgresError(
                code: .clusterFailed,
                context:
                    "the PostgreSQL server (pid \(server.pid)) of \(directory) does not accept connections (\(server.status)); try again once it has started or stopped"
            )
        }
        return server
    }

    /// What a running server's `postmaster.pid` says about it.
    public struct RunningServer: Sendable, Equatable {
        public var pid: pid_t
        public var socketDirectory: String
        public var port: Int
        /// `ready`, `starting`, `stopping` or `standby`.
        public var status: String
        /// The libpq connection string of `database` on it (keyword form).
        public var connectionString: String

        /// From the file's lines: the pid, the data directory, the start time, the port, the
        /// first socket directory, the listen address, the shared memory key, the status.
        public init?(postmasterPID text: String, database: String, user: String) {
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            guard lines.count >= 5, let pid = pid_t(lines[0]), pid > 0, let port = Int(lines[3]), !lines[4].isEmpty else { return nil }
            self.pid = pid
            self.port = port
            socketDirectory = lines[4]
            status = lines.count > 7 ? String(lines[7].filter { $0 != " " }) : "unknown"
            connectionString =
                "host=\(LocalCluster.quoted(socketDirectory)) port=\(port) user=\(LocalCluster.quoted(user)) dbname=\(LocalCluster.quoted(database))"
        }
    }

    /// Starts a throwaway cluster in a fresh directory under /tmp, tuned for speed over durability
    /// (no fsync) and for many clients (400 connections); `stop()` deletes it.
    public static func startTemporary(options: Options = Options()) throws -> LocalCluster {
        let cluster = try LocalCluster(dataDirectory: nil, temporary: true, options: options)
        try cluster.bootstrap()
        return cluster
    }

    /// A pool/connection configuration for this cluster's database.
    public func configuration() throws -> PostgresConfiguration {
        try PostgresConfiguration(connectionString: connectionString)
    }

    /// The connection string of another database on this cluster.
    public func connectionString(database: String) -> String {
        "host=\(Self.quoted(socketDirectory)) port=\(Self.port) user=\(Self.quoted(user)) dbname=\(Self.quoted(database))"
    }

    /// Creates a database (if missing) and returns its connection string: one per test suite
    /// keeps suites that share a cluster from seeing each other's tables.
    @discardableResult
    public func createDatabase(_ name: String) throws -> String {
        var configuration = try PostgresConfiguration(connectionString: connectionString(database: "postgres"))
        configuration.applicationName = "exosphere-cluster"
        let connection = try PostgresConnection(configuration: configuration)
        defer { connection.close() }
        if try connection.query("SELECT 1 FROM pg_database WHERE datname = \(name)").isEmpty {
            try connection.execute("CREATE DATABASE \(identifier: name)")
        }
        return connectionString(database: name)
    }

    /// True while the server process runs.
    public var isRunning: Bool { state.withLock { $0.serverPID > 0 } }

    private init(dataDirectory: String?, temporary: Bool, options: Options) throws {
        self.options = options
        self.isTemporary = temporary
        self.database = options.database
        self.user = options.user
        self.binDirectory = try Self.findBinDirectory()
        if geteuid() == 0 {
            guard let account = getpwnam(options.systemUser) else {
                throw PostgresError(code: .clusterFailed, context: "running as root but there is no \(options.systemUser) user")
            }
            guard let setpriv = Self.which("setpriv") else {
                throw PostgresError(code: .clusterFailed, context: "running as root but setpriv is not installed")
            }
            runAs = RunAs(name: options.systemUser, uid: account.pointee.pw_uid, gid: account.pointee.pw_gid, setpriv: setpriv)
        } else {
            runAs = nil
        }
        // Short: a unix socket path has at most 107 bytes.
        let base = try Self.makeTemporaryDirectory()
        if let runAs { chown(base, runAs.uid, runAs.gid) }
        ownedDirectory = base
        socketDirectory = base
        self.dataDirectory = dataDirectory ?? base + "/data"
        connectionString = "host=\(Self.quoted(base)) port=\(Self.port) user=\(Self.quoted(options.user)) dbname=\(Self.quoted(options.database))"
        // (Kept in step with `connectionString(database:)`, which needs `self`.)
        LocalClusterRegistry.register(self)
    }

    deinit {
        stop()
    }

    // MARK: - Lifecycle

    func bootstrap() throws {
        do {
            if access(dataDirectory + "/PG_VERSION", F_OK) != 0 { try initialize() }
            try startServer()
            try createDatabaseIfMissing()
        } catch {
            stop(mode: .immediate)
            throw error
        }
    }

    /// Stops the server and, for a temporary cluster, deletes its directory. Idempotent.
    /// The server's process and every process it started (backends, background workers), from
    /// `/proc`: for tests that stop them all at once (`SIGSTOP`) to freeze the database.
    public func processIDs() -> [pid_t] {
        let postmaster = state.withLock { $0.serverPID }
        guard postmaster > 0, let proc = opendir("/proc") else { return [] }
        defer { closedir(proc) }
        var pids = [postmaster]
        while let entry = readdir(proc) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let pid = pid_t(name), let stat = try? FileReader.bytes("/proc/\(name)/stat", limit: 4096) else { continue }
            // The parent is the second field after the command, which is in parentheses and may hold spaces.
            guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { continue }
            let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
            if fields.count > 1, pid_t(String(decoding: fields[1], as: UTF8.self)) == postmaster { pids.append(pid) }
        }
        return pids
    }

    public func stop(mode: ShutdownMode = .fast) {
        let alreadyStopped = state.withLock { state in
            defer { state.stopped = true }
            return state.stopped
        }
        guard !alreadyStopped else { return }
        stopServer(mode: mode)
        if isTemporary {
            removeTree(ownedDirectory)
        } else {
            removeTree(socketDirectory)
        }
        LocalClusterRegistry.unregister(self)
    }

    /// Stops the server but keeps the data and socket directories, so that `startServer()` can
    /// bring it back on the same connection string (for outage and recovery tests).
    public func stopServer(mode: ShutdownMode = .fast) {
        let (pid, watchdog, writeEnd) = state.withLock { state in
            defer {
                state.serverPID = 0
                state.watchdogPID = 0
                state.watchdogWriteEnd = -1
            }
            return (state.serverPID, state.watchdogPID, state.watchdogWriteEnd)
        }
        if pid > 0 {
            let signal: Int32 =
                switch mode {
                case .smart: SIGTERM
                case .fast: SIGINT
                case .immediate: SIGQUIT
                }
            kill(pid, signal)
            if !Self.waitForExit(pid, timeout: .seconds(mode == .immediate ? 10 : 30)) {
                kill(pid, SIGQUIT)
                if !Self.waitForExit(pid, timeout: .seconds(10)) {
                    kill(pid, SIGKILL)
                    _ = Self.waitForExit(pid, timeout: .seconds(10))
                }
            }
        }
        if watchdog > 0 {
            kill(watchdog, SIGKILL)
            _ = Self.waitForExit(watchdog, timeout: .seconds(5))
        }
        if writeEnd >= 0 { close(writeEnd) }
    }

    /// Starts the server on the existing data directory and waits until it accepts connections.
    public func startServer() throws {
        guard !isRunning else { return }
        var arguments = [
            binDirectory + "/postgres", "-D", dataDirectory, "-k", socketDirectory,
            "-p", String(Self.port), "-c", "listen_addresses=",
        ]
        var settings = options.settings
        if isTemporary {
            // A test process runs many servers at once, each with its pool, pipelines, background
            // and listening connections: the default 100 ran out once every server listened too.
            for (name, value) in ["fsync": "off", "synchronous_commit": "off", "full_page_writes": "off", "max_connections": "400"]
            where settings[name] == nil { settings[name] = value }
        }
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) { arguments += ["-c", "\(name)=\(value)"] }
        let logPath = dataDirectory + "/exosphere-server.log"
        let pid = try spawn(asServerUser: arguments, output: logPath)
        state.withLock { $0.serverPID = pid }
        try startWatchdog(serverPID: pid)
        try waitUntilReady(pid: pid, logPath: logPath)
    }

    /// Stops the server (immediately by default, as a crash would) and starts it again on the
    /// same data directory and socket.
    public func restart(mode: ShutdownMode = .immediate) throws {
        stopServer(mode: mode)
        try startServer()
    }

    func initialize() throws {
        let parent = String(dataDirectory[..<(dataDirectory.lastIndex(of: "/") ?? dataDirectory.startIndex)])
        try Self.makeDirectories(parent.isEmpty ? "/" : parent)
        if mkdir(dataDirectory, 0o700) != 0, errno != EEXIST {
            throw PostgresError(code: .clusterFailed, context: "cannot create \(dataDirectory): \(String(cString: strerror(errno)))")
        }
        if let runAs { chown(dataDirectory, runAs.uid, runAs.gid) }
        var arguments = [
            binDirectory + "/initdb", "-D", dataDirectory, "--auth=trust", "-E", "UTF8",
            "--no-locale", "-U", user, "--no-instructions",
        ]
        if isTemporary { arguments.append("--no-sync") }
        // Not in the data directory: initdb wants it empty.
        let logPath = socketDirectory + "/initdb.log"
        let pid = try spawn(asServerUser: arguments, output: logPath)
        let status = Self.waitForExit(pid, timeout: .seconds(120), reportStatus: true)
        guard status else {
            throw PostgresError(code: .clusterFailed, context: "initdb failed: \(Self.tail(of: logPath))")
        }
    }

    func waitUntilReady(pid: pid_t, logPath: String) throws {
        let conninfo = connectionString(database: "postgres") + " connect_timeout=2"
        let start = ContinuousClock.now
        while true {
            if PQping(conninfo) == PQPING_OK { return }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid {
                state.withLock { $0.serverPID = 0 }
                stopServer(mode: .immediate)
                throw PostgresError(code: .clusterFailed, context: "postgres exited during start-up: \(Self.tail(of: logPath))")
            }
            if ContinuousClock.now - start > options.startTimeout {
                stopServer(mode: .immediate)
                throw PostgresError(
                    code: .clusterFailed, context: "postgres did not accept connections within \(options.startTimeout): \(Self.tail(of: logPath))")
            }
            usleep(5_000)
        }
    }

    func createDatabaseIfMissing() throws {
        try createDatabase(database)
    }

    /// A `sh` that blocks reading a pipe whose only writer is this process: when this process
    /// dies, however it dies, the read returns and the shell stops the server (and, for a temporary
    /// cluster, deletes its directory).
    func startWatchdog(serverPID: pid_t) throws {
        // Close-on-exec from birth, so no other child (a concurrently started server) inherits
        // the writing end and keeps the watchdog waiting forever.
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw PostgresError(code: .clusterFailed, context: "socketpair: \(String(cString: strerror(errno)))")
        }
        let cleanup = isTemporary ? ownedDirectory : socketDirectory
        let signal = isTemporary ? "QUIT" : "INT"
        let script = """
            read _; kill -\(signal) \(serverPID) 2>/dev/null; i=0
            while kill -0 \(serverPID) 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
            rm -rf '\(cleanup)'
            """
        let pid: pid_t
        do {
            pid = try Self.spawn(["/bin/sh", "-c", script], output: "/dev/null", input: ends[0])
        } catch {
            close(ends[0])
            close(ends[1])
            throw error
        }
        close(ends[0])
        state.withLock {
            $0.watchdogPID = pid
            $0.watchdogWriteEnd = ends[1]
        }
    }

    // MARK: - Processes

    func spawn(asServerUser arguments: [String], output: String) throws -> pid_t {
        var argv = arguments
        if let runAs {
            argv = [runAs.setpriv, "--reuid=\(runAs.name)", "--regid=\(runAs.name)", "--init-groups", "--"] + arguments
        }
        return try Self.spawn(argv, output: output, input: nil)
    }

    /// posix_spawn with stdin from `input` (or /dev/null), stdout and stderr appended to `output`,
    /// default signal dispositions, an empty signal mask and its own process group (so a terminal's
    /// Ctrl-C reaches only this process, whose exit the watchdog notices).
    static func spawn(_ arguments: [String], output: String, input: Int32?) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let input {
            posix_spawn_file_actions_adddup2(&actions, input, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_APPEND, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard status == 0 else {
            throw PostgresError(code: .clusterFailed, context: "cannot run \(arguments[0]): \(String(cString: strerror(status)))")
        }
        return pid
    }

    /// Waits for a child to exit; with `reportStatus`, returns whether it exited with status 0.
    @discardableResult
    static func waitForExit(_ pid: pid_t, timeout: Duration, reportStatus: Bool = false) -> Bool {
        let start = ContinuousClock.now
        var delay: UInt32 = 1_000
        while true {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                // WIFEXITED && WEXITSTATUS == 0
                return reportStatus ? (status & 0x7f == 0 && (status >> 8) & 0xff == 0) : true
            }
            if result < 0, errno != EINTR { return !reportStatus }  // not our child (already reaped)
            if ContinuousClock.now - start > timeout { return false }
            usleep(delay)
            delay = min(delay * 2, 20_000)
        }
    }

    // MARK: - Files and paths

    /// The PostgreSQL server binaries' directory: `pg_config --bindir`, the newest
    /// `/usr/lib/postgresql/*/bin`, or `PATH`.
    public static func findBinDirectory() throws -> String {
        func hasServer(_ directory: String) -> Bool {
            access(directory + "/initdb", X_OK) == 0 && access(directory + "/postgres", X_OK) == 0
        }
        if let pgConfig = which("pg_config"), let bindir = try? capture([pgConfig, "--bindir"]), hasServer(bindir) {
            return bindir
        }
        var candidates: [String] = []
        if let stream = opendir("/usr/lib/postgresql") {
            while let entry = readdir(stream) {
                let name = withUnsafePointer(to: &entry.pointee.d_name) {
                    String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
                }
                if let version = Int(name) { candidates.append(String(version)) }
            }
            closedir(stream)
        }
        for version in candidates.sorted(by: { Int($0)! > Int($1)! }) where hasServer("/usr/lib/postgresql/\(version)/bin") {
            return "/usr/lib/postgresql/\(version)/bin"
        }
        if let initdb = which("initdb") {
            let directory = String(initdb[..<initdb.lastIndex(of: "/")!])
            if hasServer(directory) { return directory }
        }
        // Says what to do: a container image without the server package lands here when DATABASE_URL is unset.
        throw PostgresError(
            code: .clusterFailed,
            context: "no PostgreSQL server binaries (initdb and postgres) in pg_config --bindir, "
                + "/usr/lib/postgresql/*/bin or PATH: install the PostgreSQL server to run a managed cluster, "
                + "or set DATABASE_URL to use an existing PostgreSQL")
    }

    static func which(_ name: String) -> String? {
        let path = getenv("PATH").map { String(cString: $0) } ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where access("\(directory)/\(name)", X_OK) == 0 {
            return "\(directory)/\(name)"
        }
        return nil
    }

    /// Runs a short command and returns its first output line.
    static func capture(_ arguments: [String]) throws -> String {
        let path = try makeTemporaryDirectory()
        defer { removeTreeSync(path) }
        let pid = try spawn(arguments, output: path + "/out", input: nil)
        guard waitForExit(pid, timeout: .seconds(10), reportStatus: true) else {
            throw PostgresError(code: .clusterFailed, context: "\(arguments[0]) failed")
        }
        let text = (try? FileReader.text(path + "/out")) ?? ""
        return String(text.split(separator: "\n").first ?? "")
    }

    static func makeTemporaryDirectory() throws -> String {
        do {
            return try FileSystem.createTemporaryDirectory(prefix: "exo-pg")
        } catch {
            throw PostgresError(code: .clusterFailed, context: error.description)
        }
    }

    static func makeDirectories(_ path: String) throws {
        var current = ""
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o755) != 0, errno != EEXIST {
                throw PostgresError(code: .clusterFailed, context: "cannot create \(current): \(String(cString: strerror(errno)))")
            }
        }
    }

    static func absolutePath(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        guard let pointer = getcwd(nil, 0) else { return path }
        defer { free(pointer) }
        let cwd = String(cString: pointer)
        var relative = Substring(path)
        while relative.hasPrefix("./") { relative = relative.dropFirst(2) }
        return cwd == "/" ? "/" + relative : cwd + "/" + relative
    }

    func removeTree(_ path: String) { Self.removeTreeSync(path) }

    static func removeTreeSync(_ path: String) {
        guard path.hasPrefix("/tmp/exo-pg-") else { return }
        if let pid = try? spawn(["/bin/rm", "-rf", path], output: "/dev/null", input: nil) {
            waitForExit(pid, timeout: .seconds(30))
        }
    }

    static func tail(of path: String) -> String {
        guard let text = try? FileReader.text(path) else { return "(no log at \(path))" }
        return String(text.suffix(2_000))
    }

    /// Quotes a conninfo value.
    static func quoted(_ value: String) -> String {
        var result = "'"
        for character in value {
            if character == "\\" || character == "'" { result.append("\\") }
            result.append(character)
        }
        return result + "'"
    }
}

/// Clusters still running, stopped by an atexit handler at normal process exit.
enum LocalClusterRegistry {
    struct Entry: Sendable { weak var cluster: LocalCluster? }
    static let clusters = Mutex<[ObjectIdentifier: Entry]>([:])
    static let installAtExit: Void = {
        atexit { LocalClusterRegistry.stopAll() }
    }()

    static func register(_ cluster: LocalCluster) {
        _ = installAtExit
        clusters.withLock { $0[ObjectIdentifier(cluster)] = Entry(cluster: cluster) }
    }

    static func unregister(_ cluster: LocalCluster) {
        clusters.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(cluster)) }
    }

    static func stopAll() {
        let running = clusters.withLock { $0.values.compactMap(\.cluster) }
        running.forEach { $0.stop(mode: $0.isTemporary ? .immediate : .fast) }
    }
}
