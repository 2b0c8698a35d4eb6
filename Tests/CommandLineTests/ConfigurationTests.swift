import API
@testable import exosphere
import StructuredLogging
import TestSupport
import Testing

/// The configuration error of a parse that must fail, or a recorded issue.
private func failure(
    _ arguments: [String], _ environment: [String: String] = [:],
    sourceLocation: SourceLocation = #_sourceLocation
) -> String? {
    do {
        let configuration = try Configuration.parse(arguments: arguments, environment: environment)
        Issue.record("expected an error, got port \(configuration.server.port)", sourceLocation: sourceLocation)
        return nil
    } catch {
        return error.description
    }
}

@Suite(.testThreads) struct ConfigurationTests {
    @Test func defaults() throws {
        let configuration = try Configuration.parse(arguments: [], environment: [:])
        #expect(configuration.server.host == "127.0.0.1")
        #expect(configuration.server.port == 8080)
        #expect(configuration.server.headerTimeout == .seconds(10))
        #expect(configuration.server.drainTimeout == .seconds(10))
        // Below a proxy's usual 5 s, so that an outage is the server's 503, not the proxy's 504.
        #expect(configuration.server.requestDeadline == .seconds(4))
        #expect(configuration.logLevel == .info)
        #expect(configuration.logFormat == .json)
    }

    @Test func flagsWithSeparateValues() throws {
        let configuration = try Configuration.parse(
            arguments: [
                "--host", "0.0.0.0", "--port", "9090", "--event-loops", "3", "--worker-threads", "7",
                "--max-connections", "50", "--max-body-bytes", "2048", "--header-timeout", "4",
                "--idle-timeout", "30", "--drain-timeout", "0", "--log-level", "WARNING", "--log-format", "logfmt",
                "--request-timeout", "3",
            ], environment: [:])
        #expect(configuration.server.host == "0.0.0.0")
        #expect(configuration.server.port == 9090)
        #expect(configuration.server.eventLoops == 3)
        #expect(configuration.server.workerThreads == 7)
        #expect(configuration.server.maxConnections == 50)
        #expect(configuration.server.limits.maxBodyBytes == 2048)
        #expect(configuration.server.headerTimeout == .seconds(4))
        #expect(configuration.server.idleTimeout == .seconds(30))
        #expect(configuration.server.drainTimeout == .seconds(0))
        #expect(configuration.server.requestDeadline == .seconds(3))
        #expect(configuration.logLevel == .warning)
        #expect(configuration.logFormat == .logfmt)
    }

    @Test func flagsWithEquals() throws {
        let configuration = try Configuration.parse(arguments: ["--port=0", "--host=::1", "--log-level=debug"], environment: [:])
        #expect(configuration.server.port == 0)
        #expect(configuration.server.host == "::1")
        #expect(configuration.logLevel == .debug)
    }

    @Test func valueMayContainEquals() throws {
        let configuration = try Configuration.parse(arguments: ["--host=a=b"], environment: [:])
        #expect(configuration.server.host == "a=b")
    }

    @Test func environmentVariables() throws {
        let configuration = try Configuration.parse(
            arguments: [],
            environment: [
                "HOST": "10.0.0.1", "PORT": "7070", "LOG_LEVEL": "error", "LOG_FORMAT": "logfmt",
                "EXOSPHERE_EVENT_LOOPS": "2", "EXOSPHERE_DRAIN_TIMEOUT": "5", "UNRELATED": "x",
            ])
        #expect(configuration.server.host == "10.0.0.1")
        #expect(configuration.server.port == 7070)
        #expect(configuration.logLevel == .error)
        #expect(configuration.logFormat == .logfmt)
        #expect(configuration.server.eventLoops == 2)
        #expect(configuration.server.drainTimeout == .seconds(5))
    }

    @Test func databasePipeliningIsOnUnlessTurnedOff() throws {
        #expect(try Configuration.parse(arguments: [], environment: [:]).databasePipelining)
        #expect(try Configuration.parse(arguments: ["--db-pipelining", "off"], environment: [:]).databasePipelining == false)
        #expect(try Configuration.parse(arguments: [], environment: ["EXOSPHERE_DB_PIPELINING": "0"]).databasePipelining == false)
        #expect(
            try Configuration.parse(
                arguments: ["--db-pipelining=on"],
                environment: ["EXOSPHERE_DB_PIPELINING": "off"]
            ).databasePipelining)
        #expect(
            failure(["--db-pipelining", "yes"])
                == "--db-pipelining/EXOSPHERE_DB_PIPELINING: expected on or off, got 'yes'")
    }

    @Test func flagBeatsEnvironmentBeatsDefault() throws {
        let environment = ["HOST": "10.0.0.1", "PORT": "7070"]
        let flagged = try Configuration.parse(arguments: ["--port", "9090"], environment: environment)
        #expect(flagged.server.port == 9090)
        #expect(flagged.server.host == "10.0.0.1")
        let last = try Configuration.parse(arguments: ["--port", "1", "--port=2"], environment: environment)
        #expect(last.server.port == 2)
    }

    @Test(
        arguments: [
            (["--port", "abc"], [:]),
            (["--port", "65536"], [:]),
            (["--port", "-1"], [:]),
            (["--port", ""], [:]),
            (["--port="], [:]),
            (["--port"], [:]),
            (["--port", "80 "], [:]),
            (["--bogus", "1"], [:]),
            (["serve"], [:]),
            (["-p", "80"], [:]),
            (["--host", ""], [:]),
            (["--host="], [:]),
            (["--event-loops", "0"], [:]),
            (["--worker-threads", "100000"], [:]),
            (["--max-connections", "0"], [:]),
            (["--max-body-bytes", "-5"], [:]),
            (["--header-timeout", "0"], [:]),
            (["--idle-timeout", "1.5"], [:]),
            (["--drain-timeout", "99999"], [:]),
            (["--log-level", "loud"], [:]),
            (["--log-format", "xml"], [:]),
            (["--hashing-priority", "high"], [:]),
            ([], ["PORT": "http"]),
            ([], ["PORT": "99999"]),
            ([], ["HOST": ""]),
            ([], ["LOG_LEVEL": "verbose"]),
            ([], ["EXOSPHERE_MAX_CONNECTIONS": "many"]),
        ] as [([String], [String: String])])
    func invalidValuesGiveOneLineError(_ arguments: [String], _ environment: [String: String]) {
        let message = failure(arguments, environment)
        #expect(message?.isEmpty == false)
        #expect(message?.contains("\n") == false)
    }

    @Test func errorNamesTheSettingAndTheValue() {
        #expect(failure(["--port", "abc"]) == "--port/PORT: expected an integer in 0...65535, got 'abc'")
        #expect(failure(["--frobnicate"])?.contains("--frobnicate") == true)
        #expect(failure(["--port"]) == "--port needs a value")
        #expect(failure(["--port", "8\n0"]) == "--port/PORT: expected an integer in 0...65535, got '8\\n0'")
    }

    @Test(arguments: ["a\nb", "x\r\ny", "\u{1B}[31mred", "tab\there"])
    func valuesWithControlCharactersStillGiveOneLine(_ value: String) {
        for message in [
            failure(["--log-level", value]), failure(["--port", value]), failure(["--log-format", value]),
            failure(["--\(value)"]), failure([], ["PORT": value]),
        ] {
            #expect(message?.contains("\n") == false)
            #expect(message?.contains("\r") == false)
            #expect(message?.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F } == false)
        }
    }

    @Test func hashingYieldsToOtherWorkUnlessToldOtherwise() throws {
        #expect(try Configuration.parse(arguments: [], environment: [:]).hashingPriority == .idle)
        #expect(try Configuration.parse(arguments: ["--hashing-priority", "normal"], environment: [:]).hashingPriority == .normal)
        #expect(try Configuration.parse(arguments: [], environment: ["EXOSPHERE_HASHING_PRIORITY": "normal"]).hashingPriority == .normal)
        #expect(failure(["--hashing-priority", "high"]) == "--hashing-priority/EXOSPHERE_HASHING_PRIORITY: expected idle or normal, got 'high'")
    }

    @Test func helpListsEveryOption() {
        let help = Configuration.help
        for option in Configuration.options {
            #expect(help.contains(option.flag))
            #expect(help.contains(option.environment))
        }
        #expect(help.contains("default: 8080"))
    }

    @Test func scryptAcceptsOWASPsEquivalentsAndNothingWeaker() throws {
        // The default is OWASP's 16 MiB configuration; the 128 MiB one is a configuration away.
        #expect(try Configuration.parse(arguments: [], environment: [:]).passwordHashing.description == "ln=14,r=8,p=5")
        let classic = try Configuration.parse(arguments: ["--scrypt-ln", "17", "--scrypt-p", "1"], environment: [:])
        #expect(classic.passwordHashing.description == "ln=17,r=8,p=1")
        let stronger = try Configuration.parse(arguments: ["--scrypt-ln", "18", "--scrypt-p", "1"], environment: [:])
        #expect(stronger.passwordHashing.description == "ln=18,r=8,p=1")
        #expect(throws: ConfigurationError.self) { try Configuration.parse(arguments: ["--scrypt-p", "4"], environment: [:]) }
        #expect(throws: ConfigurationError.self) { try Configuration.parse(arguments: ["--scrypt-ln", "12", "--scrypt-p", "16"], environment: [:]) }
        #expect(throws: ConfigurationError.self) { try Configuration.parse(arguments: ["--scrypt-r", "4"], environment: [:]) }
    }
}
