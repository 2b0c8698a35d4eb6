import Glibc
import Logging

/// The `exosphere` command: parses the command line and runs what it names.
public enum Exosphere {
    public static let version = "0.1.0"

    static let usage = """
        Exosphere \(version): a self-hosted backend for user accounts and profiles.

        Usage:
          exosphere serve [options]   run the HTTP server (see exosphere serve --help)
          exosphere migrate [options] apply pending database migrations and exit
          exosphere openapi           print the OpenAPI 3.1 document of the HTTP API
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
                printError("exosphere: invalid configuration: \(error)")
                return 2
            }
            let logger = Logger(label: "exosphere", level: configuration.logLevel, format: configuration.logFormat)
            return command == "serve" ? serve(configuration, logger: logger) : migrate(configuration, logger: logger)
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

    static func printError(_ line: String) {
        var text = line + "\n"
        text.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
