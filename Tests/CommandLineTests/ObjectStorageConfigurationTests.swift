import API
@testable import exosphere
import TestSupport
import Testing

/// `--image-storage s3` and its `--s3-*` flags: credentials only from the environment, and a
/// store that cannot work refused at start-up.
@Suite(.testThreads) struct ObjectStorageConfigurationTests {
    static let keys = ["AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]

    static func problem(_ arguments: [String], _ environment: [String: String]) -> String? {
        do {
            _ = try Configuration.parse(arguments: arguments, environment: environment)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func flagsAndTheEnvironment() throws {
        let configuration = try Configuration.parse(
            arguments: [
                "--image-storage", "s3", "--s3-endpoint", "https://s3.example.com", "--s3-bucket", "exo-images", "--s3-region", "eu-west-3",
                "--s3-path-style", "on", "--s3-prefix", "images/", "--s3-redirect", "on", "--s3-ca-file", "/etc/exosphere/store-ca.pem",
                "--s3-orphan-grace", "600",
            ], environment: Self.keys)
        let s3 = try #require(configuration.images.s3)
        #expect(configuration.images.storage == .s3)
        #expect(s3.endpoint == "https://s3.example.com")
        #expect(s3.bucket == "exo-images")
        #expect(s3.region == "eu-west-3")
        #expect(s3.pathStyle)
        #expect(s3.credentials.secretAccessKey == Self.keys["AWS_SECRET_ACCESS_KEY"])
        #expect(configuration.images.s3Prefix == "images/")
        #expect(configuration.images.s3Redirect)
        #expect(s3.caFile == "/etc/exosphere/store-ca.pem")
        #expect(configuration.images.orphanObjectGraceSeconds == 600)
        let fromEnvironment = try Configuration.parse(
            arguments: [],
            environment: Self.keys.merging(
                ["EXOSPHERE_IMAGE_STORAGE": "s3", "EXOSPHERE_S3_ENDPOINT": "http://127.0.0.1:7480", "EXOSPHERE_S3_BUCKET": "images"]) { $1 })
        #expect(fromEnvironment.images.s3?.region == "us-east-1")
        #expect(fromEnvironment.images.s3?.pathStyle == false)
        // The switches given bare, as the contract writes them, are on; a value still counts.
        let bare = try Configuration.parse(
            arguments: [
                "--image-storage", "s3", "--s3-path-style", "--s3-endpoint", "https://s3.example.com", "--s3-bucket", "exo-images",
                "--s3-redirect",
            ], environment: Self.keys)
        #expect(bare.images.s3?.pathStyle == true && bare.images.s3Redirect)
        let off = try Configuration.parse(arguments: ["--email-code-signup", "off", "--image-storage", "database"], environment: [:])
        #expect(!off.accounts.emailCodeSignup)
        #expect(try Configuration.parse(arguments: ["--email-code-signup"], environment: [:]).accounts.emailCodeSignup)
    }

    @Test func whatIsRefused() {
        let s3 = ["--image-storage", "s3", "--s3-endpoint", "https://s3.example.com", "--s3-bucket", "images"]
        #expect(Self.problem(["--image-storage", "s3"], Self.keys)?.contains("needs --s3-endpoint and --s3-bucket") == true)
        #expect(Self.problem(s3, [:])?.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY") == true)
        #expect(Self.problem(["--image-storage", "s3", "--s3-endpoint", "http://s3.example.com", "--s3-bucket", "images"], Self.keys) != nil)
        #expect(Self.problem(["--image-storage", "s3", "--s3-endpoint", "https://s3.example.com", "--s3-bucket", "No"], Self.keys) != nil)
        #expect(Self.problem(s3 + ["--s3-secret", "x"], Self.keys)?.contains("unknown option") == true)
        #expect(Self.problem(s3 + ["--s3-orphan-grace", "-1"], Self.keys) != nil)
        #expect(Self.problem(s3 + ["--s3-ca-file", ""], Self.keys) != nil)
        #expect(Self.problem(["--image-storage", "tape"], [:])?.contains("database, filesystem or s3") == true)
        // The secret never appears in a problem.
        #expect(Self.problem(s3 + ["--s3-path-style", "maybe"], Self.keys)?.contains("wJalr") == false)
    }
}
