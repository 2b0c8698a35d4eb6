import API
@testable import exosphere
import TestSupport
import Testing

/// `Exosphere.main` as the process runs it: informational commands, usage errors.
@Suite(.testThreads) struct CommandTests {
    @Test(arguments: [["--version"], ["-V"], ["version"], ["--help"], ["-h"], ["help"], ["serve", "--help"], ["serve", "--port", "1", "-h"]])
    func informationalCommandsSucceed(_ arguments: [String]) {
        #expect(Exosphere.main(arguments: arguments, environment: [:]) == 0)
    }

    @Test(arguments: [[], ["bogus"], ["--verbose"], ["serve", "--port", "abc"], ["serve", "--nope"], ["serve", "--port"]])
    func unknownCommandsAndInvalidConfigurationFail(_ arguments: [String]) {
        #expect(Exosphere.main(arguments: arguments, environment: [:]) != 0)
    }

    @Test func invalidEnvironmentFails() {
        #expect(Exosphere.main(arguments: ["serve"], environment: ["PORT": "eighty"]) != 0)
    }
}

/// Flags and variables of the trust and throttle settings.
@Suite(.testThreads) struct ClientAndLimitFlagsTests {
    @Test func trustedProxiesAreNoneByDefault() throws {
        #expect(try Configuration.parse(arguments: [], environment: [:]).trustedProxies.isEmpty)
        #expect(Configuration.help.contains("EXOSPHERE_TRUSTED_PROXIES, default: (none)"))
    }

    @Test func trustedProxiesFromAFlagOrTheEnvironment() throws {
        let flag = try Configuration.parse(arguments: ["--trusted-proxies", "127.0.0.1, ::1,2001:DB8::0:53"], environment: [:])
        #expect(flag.trustedProxies == ["127.0.0.1", "::1", "2001:db8::53"])
        let variable = try Configuration.parse(arguments: [], environment: ["EXOSPHERE_TRUSTED_PROXIES": "10.0.0.1,10.0.0.2"])
        #expect(variable.trustedProxies == ["10.0.0.1", "10.0.0.2"])
        let both = try Configuration.parse(arguments: ["--trusted-proxies=10.9.9.9"], environment: ["EXOSPHERE_TRUSTED_PROXIES": "10.0.0.1"])
        #expect(both.trustedProxies == ["10.9.9.9"])
        #expect(try Configuration.parse(arguments: ["--trusted-proxies", ""], environment: [:]).trustedProxies.isEmpty)
    }

    @Test(arguments: ["10.0.0.0/8", "proxy.internal", "10.0.0.1:80", "10.0.0.1,nope"])
    func trustedProxiesMustBeAddresses(_ value: String) {
        #expect(throws: ConfigurationError.self) { try Configuration.parse(arguments: ["--trusted-proxies", value], environment: [:]) }
    }

    @Test func signInLimitsFromFlags() throws {
        let configuration = try Configuration.parse(
            arguments: [
                "--signin-limit", "2", "--signin-email-limit", "3", "--signin-address-limit=4",
                "--registration-address-limit", "0",
            ], environment: [:])
        #expect(configuration.accounts.signInPerEmailAndAddress.limit == 2)
        #expect(configuration.accounts.signInPerEmail.limit == 3)
        #expect(configuration.accounts.signInPerAddress.limit == 4)
        #expect(configuration.accounts.registrationsPerAddress.limit == 0)
        let defaults = Configuration()
        #expect(defaults.accounts.signInPerEmailAndAddress.limit == 10)
        #expect(defaults.accounts.signInPerEmail.limit == 100)
        #expect(defaults.accounts.signInPerAddress.limit == 100)
        #expect(defaults.accounts.registrationsPerAddress.limit == 100)
        #expect(defaults.accounts.registrationsPerAddress.windowSeconds == 3600)
        #expect(throws: ConfigurationError.self) { try Configuration.parse(arguments: ["--signin-email-limit", "0"], environment: [:]) }
        #expect(throws: ConfigurationError.self) { try Configuration.parse(arguments: ["--signin-limit", "0"], environment: [:]) }
    }
}
