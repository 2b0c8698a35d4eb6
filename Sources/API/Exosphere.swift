import Glibc
import Logging
import Security
import Synchronization
import Threads

/// The `exosphere` command: parses the command line and runs what it names.
public enum Exosphere {
    public static let version = "0.1.0"

    static let usage = """
        Exosphere \(version): a self-hosted backend for user accounts and profiles.

        Usage:
          exosphere serve [options]   run the HTTP server (see exosphere serve --help)
          exosphere migrate [options] apply pending database migrations and exit
          exosphere openapi           print the OpenAPI 3.1 document of the HTTP API
          exosphere hash-benchmark [--seconds N]
                                      scrypt hashes per second on every core, at the production cost
          exosphere --help            show this text
          exosphere --version         print the version
        """

    /// Runs the command and returns the process exit status.
    public static func main(arguments: [String], environment: [String: String]) -> Int32 {
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
        case "serve", "migrate":
            let rest = Array(arguments.dropFirst())
            if rest.contains("--help") || rest.contains("-h") {
                print(Configuration.help)
                return 0
            }
            let configuration: Configuration
            do {
                configuration = try Configuration.parse(arguments: rest, environment: environment)
            } catch {
                for problem in error.problems { printError("exosphere: invalid configuration: \(problem)") }
                return 2
            }
            let logger = Logger(label: "exosphere", level: configuration.logLevel, format: configuration.logFormat)
            return command == "serve" ? serve(configuration, logger: logger) : migrate(configuration, logger: logger)
        case "hash-benchmark":
            return hashBenchmark(Array(arguments.dropFirst()))
        default:
            printError("exosphere: unknown command '\(command)' (see exosphere --help)")
            return 2
        }
    }

    static func serve(_ configuration: Configuration, logger: Logger) -> Int32 {
        Application.blockTerminationSignals()
        let application: Application
        do {
            application = try Application(configuration: configuration, logger: logger)
        } catch {
            printError("exosphere: \(String(reflecting: error))")
            return 1
        }
        let signal = Application.waitForSignal()
        logger.notice("signal received", ["signal": signal])
        application.shutdown()
        return 0
    }

    static func migrate(_ configuration: Configuration, logger: Logger) -> Int32 {
        Application.blockTerminationSignals()
        do {
            let database = try Database.start(configuration, logger: logger)
            database.shutdown()
            return 0
        } catch {
            printError("exosphere: \(String(reflecting: error))")
            return 1
        }
    }

    /// Hashes with the production parameters on one thread per core for a while; prints the rate.
    static func hashBenchmark(_ arguments: [String]) -> Int32 {
        var seconds = 10
        if arguments.count == 2, arguments[0] == "--seconds", let value = Int(arguments[1]), value > 0 {
            seconds = value
        } else if !arguments.isEmpty {
            printError("usage: exosphere hash-benchmark [--seconds N]")
            return 2
        }
        let hasher = PasswordHasher()
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

    static func printError(_ line: String) {
        var text = line + "\n"
        text.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
