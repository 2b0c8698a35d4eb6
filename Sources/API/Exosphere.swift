import Glibc
import Logging

/// The `exosphere` command: parses the command line and runs what it names.
public enum Exosphere {
    public static let version = "0.1.0"

    static let usage = """
        Exosphere \(version): a self-hosted backend for user accounts and profiles.

        Usage:
          exosphere serve [options]   run the HTTP server (see exosphere serve --help)
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
        case "serve":
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
            Application.blockTerminationSignals()
            do {
                try Application(configuration: configuration, logger: logger).runUntilSignalled()
                return 0
            } catch {
                printError("exosphere: \(error)")
                return 1
            }
        default:
            printError("exosphere: unknown command '\(command)' (see exosphere --help)")
            return 2
        }
    }

    static func printError(_ line: String) {
        var text = line + "\n"
        text.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }
}
