import API
import Accounts
import Glibc
import Images
import SocketClient
import StructuredLogging
import Cryptography
import Synchronization
import Threads

/// The `exosphere` command: parses the command line and runs what it names.
enum Exosphere {
    static let version = Application.version

    static let usage = """
        Exosphere \(version): a self-hosted backend for user accounts and profiles.

        Usage:
          exosphere serve [options]   run the HTTP server (see exosphere serve --help)
          exosphere migrate [options] apply pending database migrations and exit
          exosphere images migrate --to database|filesystem|s3 [--limit N] [options]
                                      move every image (or N) to one storage; resumable (options as for serve)
          exosphere keys rotate [options]
                                      a new key signs image URLs; URLs signed before keep working until they expire
          exosphere keys revoke KEY_ID [options]
                                      end a key at once: every instance refuses the URLs it signed within 2 s
                                      (the key id is the number before the dot of a URL's sig)
          exosphere admin create|reset-password --email E --password-stdin [options]
          exosphere admin list [options] | admin delete --email E [options] | admin reset-mfa --email E [options]
                                      administrators of the console and /admin/ API (options as for serve)
          exosphere openapi           print the OpenAPI 3.1 document of the HTTP API
          exosphere routes [--json] [options]
                                      the route table: authentication, body limit, throttles, hashing and audit of
                                      every route, as the options (as for serve) configure it
          exosphere healthcheck [--port N] [--host H]
                                      exit 0 if GET /healthz answers 200 within 2 s (HOST, PORT as for serve)
          exosphere hash-benchmark [--seconds N]
                                      scrypt hashes per second on every core, at the production cost
          exosphere --help            show this text
          exosphere --version         print the version
        """

    /// Runs the command and returns the process exit status.
    static func main(arguments: [String], environment: [String: String]) -> Int32 {
        guard let command = arguments.first else {
            print(usage)
            return 2
        }
        switch command {
        case "--help", "-h", "help":
            print(usage)
            return 0
        case "--version", "-V", "version":
            print("exosphere \(version)")
            return 0
        case "openapi":
            print(OpenAPIDocument.json)
            return 0
        case "routes":
            return routes(Array(arguments.dropFirst()), environment: environment)
        case "admin":
            return admin(Array(arguments.dropFirst()), environment: environment)
        case "serve", "migrate", "images", "keys":
            var rest = Array(arguments.dropFirst())
            var revokedKey: Int32?
            if command == "keys" {
                let usage = "usage: exosphere keys rotate | keys revoke KEY_ID [options as for serve]"
                switch rest.first {
                case "rotate":
                    rest.removeFirst()
                case "revoke":
                    guard rest.count >= 2, let id = Int32(rest[1]), id > 0 else {
                        printError(usage)
                        return 2
                    }
                    revokedKey = id
                    rest.removeFirst(2)
                default:
                    printError(usage)
                    return 2
                }
            }
            var target: ImageStorage?
            var limit = Int.max
            if command == "images" {
                let usage = "usage: exosphere images migrate --to database|filesystem|s3 [--limit N] [options as for serve]"
                guard rest.first == "migrate", let to = rest.firstIndex(of: "--to"), to + 1 < rest.count,
                    let storage = ImageStorage(rawValue: rest[to + 1])
                else {
                    printError(usage)
                    return 2
                }
                target = storage
                rest.removeSubrange(to...(to + 1))
                if let flag = rest.firstIndex(of: "--limit") {
                    guard flag + 1 < rest.count, let value = Int(rest[flag + 1]), value > 0 else {
                        printError(usage)
                        return 2
                    }
                    limit = value
                    rest.removeSubrange(flag...(flag + 1))
                }
                rest.removeFirst()
            }
            if rest.contains("--help") || rest.contains("-h") {
                print(Configuration.help)
                return 0
            }
            guard let configuration = parseConfiguration(rest, environment: environment) else { return 2 }
            let logger = Logger(label: "exosphere", level: configuration.logLevel, format: configuration.logFormat)
            if let target { return migrateImages(to: target, limit: limit, configuration, logger: logger) }
            if let revokedKey { return revokeKey(revokedKey, configuration, logger: logger) }
            if command == "keys" { return rotateKeys(configuration, logger: logger) }
            return command == "serve" ? serve(configuration, logger: logger) : migrate(configuration, logger: logger)
        case "healthcheck":
            return healthcheck(Array(arguments.dropFirst()), environment: environment)
        case "hash-benchmark":
            return hashBenchmark(Array(arguments.dropFirst()), environment: environment)
        default:
            printError("exosphere: unknown command '\(command)' (see exosphere --help)")
            return 2
        }
    }

    static func serve(_ configuration: Configuration, logger: Logger) -> Int32 {
        Application.returnLargeBlocksToTheSystem()
        Application.blockTerminationSignals()
        let application: Application
        do {
            application = try Application(configuration: configuration, logger: logger)
        } catch {
            printError("exosphere: \(String(reflecting: error))")
            return 1
        }
        // Like PocketBase: the first administrator is made in the browser. The link is the only
        // copy of its token (the database keeps a hash): a plain line for the operator, not a
        // structured log entry, and it works once, for an hour.
        do {
            if let link = try application.adminSetupLink() {
                printError(
                    "\nNo administrator yet. Create the first one in the console (this link works once, for an hour):\n\n    \(link)\n\nor on this machine: exosphere admin create --email E --password-stdin\n"
                )
            }
        } catch {
            logger.warning("could not make the console's setup link", ["error": String(describing: error)])
        }
        if configuration.hashingPriority == .idle, SchedulingGroups.autogroupsApplyHere() {
            logger.warning(
                "autogroup scheduling: the hashing pool's idle priority does not hold against PostgreSQL's backends, so a storm of sign-ins slows other requests; run as a service (systemd, a container) or set kernel.sched_autogroup_enabled=0"
            )
        }
        let signal = Application.waitForSignal()
        logger.notice("signal received", ["signal": signal])
        application.shutdown()
        return 0
    }

    static func migrate(_ configuration: Configuration, logger: Logger) -> Int32 {
        Application.blockTerminationSignals()
        return withDatabase(configuration, logger: logger) { _ in 0 }
    }

    /// A new URL signing key for every instance (they read keys again within a minute, and at once
    /// when a URL names one they have not seen).
    static func rotateKeys(_ configuration: Configuration, logger: Logger) -> Int32 {
        withDatabase(configuration, logger: logger) { database in
            let id = try database.pool.withConnection { try URLSigner.rotate($0) }
            try Administration.auditCommand(.commandKeysRotate(keyID: id), by: operatorName(), on: database.pool)
            printError("keys rotate: key \(id) signs image URLs now; older keys verify until a week after their retirement")
            return 0
        }
    }

    /// Ends a URL signing key at once; a new key signs first when it was the signing one.
    static func revokeKey(_ id: Int32, _ configuration: Configuration, logger: Logger) -> Int32 {
        withDatabase(configuration, logger: logger) { database in
            guard try database.pool.withConnection({ try URLSigner.revoke($0, keyID: id) }) else {
                printError("keys revoke: there is no key \(id)")
                return 1
            }
            try Administration.auditCommand(.commandKeysRevoke(keyID: id), by: operatorName(), on: database.pool)
            printError("keys revoke: key \(id) is gone; every instance refuses the URLs it signed within \(URLSigner.refreshInterval)")
            return 0
        }
    }

    /// Who runs a command, for the audit log: the operating-system user (`sudo` names the one
    /// who asked).
    static func operatorName() -> String {
        if let user = getenv("SUDO_USER").map({ String(cString: $0) }), !user.isEmpty { return user + " via sudo" }
        if let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return "uid \(geteuid())"
    }

    /// `exosphere routes [--json] [options as for serve]`: the route table, read from the table
    /// `serve` would route with; touches no database.
    static func routes(_ arguments: [String], environment: [String: String]) -> Int32 {
        var rest = arguments
        let json = rest.contains("--json")
        rest.removeAll { $0 == "--json" }
        guard let configuration = parseConfiguration(rest, environment: environment) else { return 2 }
        let entries = RouteListing.entries(configuration)
        print(json ? RouteListing.json(entries) : RouteListing.text(entries))
        return 0
    }

    /// The options of `serve` read into a `Configuration`, or nil once every problem is printed.
    static func parseConfiguration(_ arguments: [String], environment: [String: String]) -> Configuration? {
        do {
            return try Configuration.parse(arguments: arguments, environment: environment)
        } catch {
            for problem in error.problems { printError("exosphere: invalid configuration: \(problem)") }
            return nil
        }
    }

    /// Starts the database (migrating it), runs `body` and closes it: the frame of every command
    /// but `serve`. Without a URL it uses the managed cluster a running `serve` holds, and starts
    /// (then stops) one only when none runs. An error is printed, and the status is 1.
    static func withDatabase(_ configuration: Configuration, logger: Logger, _ body: (Database) throws -> Int32) -> Int32 {
        do {
            let database = try Database.start(configuration, logger: logger, runningCluster: .join)
            defer { database.shutdown() }
            return try body(database)
        } catch let error as AccountsError {
            printError("exosphere: \(error.detail)")
            return 1
        } catch {
            printError("exosphere: \(String(reflecting: error))")
            return 1
        }
    }

    /// `exosphere admin create|reset-password|reset-mfa|list|delete`: administrators, on the server's machine
    /// with its database settings. A password is read from standard input (one line), never from
    /// the command line, where other users of the machine could read it.
    static func admin(_ arguments: [String], environment: [String: String]) -> Int32 {
        let usage =
            "usage: exosphere admin create|reset-password --email E --password-stdin | list | delete --email E | reset-mfa --email E [options as for serve]"
        guard let action = arguments.first, ["create", "reset-password", "reset-mfa", "list", "delete"].contains(action) else {
            printError(usage)
            return 2
        }
        var rest = Array(arguments.dropFirst())
        var email: String?
        if let flag = rest.firstIndex(of: "--email") {
            guard flag + 1 < rest.count else {
                printError(usage)
                return 2
            }
            email = rest[flag + 1]
            rest.removeSubrange(flag...(flag + 1))
        }
        let passwordFromStdin = rest.contains("--password-stdin")
        rest.removeAll { $0 == "--password-stdin" }
        let needsPassword = action == "create" || action == "reset-password"
        guard (action == "list") == (email == nil), needsPassword == passwordFromStdin else {
            printError(usage)
            return 2
        }
        var password = ""
        if needsPassword {
            guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                printError("exosphere admin: no password on standard input")
                return 2
            }
            password = line
        }
        guard let configuration = parseConfiguration(rest, environment: environment) else { return 2 }
        let logger = Logger(label: "exosphere", level: configuration.logLevel, format: configuration.logFormat)
        return withDatabase(configuration, logger: logger) { database in
            let hasher = try PasswordHasher(
                parameters: configuration.passwordHashing, allowWeakParameters: !configuration.passwordHashing.isAtLeastOWASP)
            let hashing = HashingPool(workers: 1, queueCapacity: 4)
            defer { hashing.shutdown() }
            // A command serves no request: no session cache (its triggers still tell the instances).
            var accountsConfiguration = configuration.accounts
            accountsConfiguration.sessionCacheBytes = 0
            let accounts = AccountService(
                pool: database.pool, hasher: hasher, hashing: hashing, configuration: accountsConfiguration, logger: logger)
            defer { accounts.shutdown() }
            let audit = { (what: AuditAction) in try Administration.auditCommand(what, by: operatorName(), on: database.pool) }
            switch action {
            case "create":
                let admin = try accounts.administrators.createAdmin(email: email!, password: password)
                try audit(.commandAdminCreate(email: admin.email))
                print("admin created: \(admin.email) (\(admin.id.uuidString.lowercased()))")
            case "reset-password":
                guard try accounts.administrators.resetAdminPassword(email: email!, password: password) else {
                    printError("exosphere admin: no administrator has the email \(email!)")
                    return 1
                }
                try audit(.commandAdminResetPassword(email: email!))
                print("password set; every session of \(email!) ended")
            case "reset-mfa":
                guard try accounts.administrators.resetAdminSecondFactor(email: email!) else {
                    printError("exosphere admin: no administrator with the email \(email!) has a second factor on")
                    return 1
                }
                try audit(.commandAdminResetMFA(email: email!))
                print("second factor off for \(email!): the next sign-in takes the password alone")
            case "delete":
                guard try accounts.administrators.deleteAdmin(email: email!) else {
                    printError("exosphere admin: no administrator has the email \(email!)")
                    return 1
                }
                try audit(.commandAdminDelete(email: email!))
                print("admin deleted: \(email!)")
            default:
                try audit(.commandAdminList)
                for admin in try accounts.administrators.admins() {
                    print(
                        "\(admin.email)\t\(admin.id.uuidString.lowercased())\t\(RFC3339.format(millisecondsSinceEpoch: Int64(admin.createdAt.timeIntervalSince1970 * 1000)))"
                    )
                }
            }
            return 0
        }
    }

    /// Moves every image to `target`, printing a progress line; safe to interrupt and run again.
    static func migrateImages(to target: ImageStorage, limit: Int, _ configuration: Configuration, logger: Logger) -> Int32 {
        // Interrupting is safe (one transaction per image), so SIGTERM and SIGINT keep their
        // default action and end the process at once; unlike `serve`, nothing blocks them.
        signal(SIGPIPE, SIG_IGN)
        return withDatabase(configuration, logger: logger) { database in
            let images = ImageService(pool: database.pool, configuration: configuration.images, logger: logger)
            var lastPrinted = 0
            let moved = try images.migrate(to: target, limit: limit) { moved, total in
                if moved == total || moved - lastPrinted >= 10 || moved == 1 {
                    lastPrinted = moved
                    printError("images migrate: \(moved)/\(total) moved to \(target)")
                }
            }
            printError("images migrate: done, \(moved) moved to \(target)")
            return 0
        }
    }

    /// Hashes on one thread per core for a while at the cost `serve` would use (`EXOSPHERE_SCRYPT_*`);
    /// prints the rate.
    static func hashBenchmark(_ arguments: [String], environment: [String: String]) -> Int32 {
        var seconds = 10
        if arguments.count == 2, arguments[0] == "--seconds", let value = Int(arguments[1]), value > 0 {
            seconds = value
        } else if !arguments.isEmpty {
            printError("usage: exosphere hash-benchmark [--seconds N]")
            return 2
        }
        let hasher: PasswordHasher
        do {
            // The scrypt settings of `serve`, and none of its others (an unrelated one must not stop it).
            let configuration = try Configuration.parse(arguments: [], environment: environment.filter { $0.key.hasPrefix("EXOSPHERE_SCRYPT_") })
            hasher = try PasswordHasher(parameters: configuration.passwordHashing)
        } catch {
            printError("exosphere: \(error)")
            return 2
        }
        let threads = HashingPool.defaultWorkerCount
        let deadline = monotonicNanoseconds() + UInt64(seconds) * 1_000_000_000
        let counts = Mutex([Int](repeating: 0, count: threads))
        let workers = (0..<threads).map { index in
            OSThread(name: "hash-bench-\(index)") {
                while monotonicNanoseconds() < deadline {
                    _ = try? hasher.hash(password: "benchmark password")
                    counts.withLock { $0[index] += 1 }
                }
            }
        }
        let start = monotonicNanoseconds()
        for worker in workers { worker.join() }
        let elapsed = Double(monotonicNanoseconds() - start) / 1e9
        let total = counts.withLock { $0.reduce(0, +) }
        let rate = (Double(total) / elapsed * 100).rounded() / 100
        let p = hasher.parameters
        print("\(rate) hashes/s (\(total) hashes, \(threads) threads, \((elapsed * 10).rounded() / 10) s, scrypt ln=\(p.logN) r=\(p.r) p=\(p.p))")
        return 0
    }

    /// `GET /healthz` on a plain blocking socket, for a container's `HEALTHCHECK` (the runtime
    /// image has no curl). Exit status 0 on `200` within `timeout`, 1 on anything else, usage
    /// errors included: Docker reserves status 2.
    static func healthcheck(_ arguments: [String], environment: [String: String], timeout: Duration = .seconds(2)) -> Int32 {
        let usage = "usage: exosphere healthcheck [--port N] [--host H]"
        var index = 0
        while index < arguments.count {
            let flag = arguments[index].split(separator: "=", maxSplits: 1).first ?? ""
            guard flag == "--host" || flag == "--port" else {
                printError(usage)
                return 1
            }
            index += arguments[index].contains("=") ? 1 : 2
        }
        // The host and port rules of `serve`, and none of its other settings: an unrelated
        // variable must not make a healthy server look unhealthy.
        let configuration: Configuration
        do {
            configuration = try Configuration.parse(arguments: arguments, environment: environment.filter { $0.key == "HOST" || $0.key == "PORT" })
        } catch {
            printError("exosphere healthcheck: \(error)")
            return 1
        }
        guard configuration.server.port != 0 else {
            printError("exosphere healthcheck: port 0 is not a server's port")
            return 1
        }
        // A server listening on every address answers on loopback.
        let host =
            switch configuration.server.host {
            case "0.0.0.0": "127.0.0.1"
            case "::": "::1"
            case let host: host
            }
        switch healthStatus(host: host, port: configuration.server.port, timeout: timeout) {
        case .success(200):
            return 0
        case .success(let status):
            printError("exosphere healthcheck: GET /healthz answered \(status)")
            return 1
        case .failure(let error):
            printError("exosphere healthcheck: \(host) port \(configuration.server.port): \(error.description)")
            return 1
        }
    }

    /// Sends `GET /healthz` and returns the status code of the answer, all within `timeout`.
    static func healthStatus(host: String, port: Int, timeout: Duration) -> Result<Int, HTTPClientError> {
        Result { () throws(HTTPClientError) -> Int in
            let connection = try HTTPClientConnection(host: host, port: port, timeout: timeout, deadline: .now + timeout)
            let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            try connection.send("GET /healthz HTTP/1.1\r\nHost: \(authority)\r\nUser-Agent: exosphere-healthcheck\r\nConnection: close\r\n\r\n")
            return try connection.readResponse().status
        }
    }

    static func printError(_ line: String) {
        var text = line + "\n"
        text.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
