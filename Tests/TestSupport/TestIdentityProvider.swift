import Files
import Foundation
import Glibc

/// A sign-in provider as the tests need one: RSA signing keys made by the `openssl` command, ID
/// tokens they sign (RS256), and a key set server (`key_server.py`, over TLS with the test CA or
/// plain `http` on loopback) serving whichever of the keys a test says, with the status and
/// `Cache-Control` it says, counting its requests.
public final class TestIdentityProvider: @unchecked Sendable {
    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("key_server.py").path

    public let port: Int
    public let isSecure: Bool
    /// The control directory of the key server (`keys.json`, `status`, `cache-control`, `requests.log`).
    public let directory: String
    private let process = Process()
    private let input = Pipe()

    /// The key set's URL: `https://localhost:PORT/keys` with TLS, else `http://127.0.0.1:PORT/keys`.
    public var keySetURL: String { isSecure ? "https://localhost:\(port)/keys" : "http://127.0.0.1:\(port)/keys" }

    public init(tls: Bool = false) throws {
        isSecure = tls
        directory = try FileSystem.createTemporaryDirectory(prefix: "key-server")
        var arguments = [Self.script, "--dir", directory]
        if tls {
            let certificates = try TestCertificates.shared()
            arguments += ["--cert", certificates.server.certificate, "--key", certificates.server.key]
        }
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try process.run()
        let line = try TestSMTPServer.readLine(output.fileHandleForReading.fileDescriptor, within: .seconds(30))
        port = line.hasPrefix("port ") ? Int(line.dropFirst(5)) ?? 0 : 0
        guard port > 0 else {
            stop()
            throw TestFailure("key_server.py did not start (stdout: \(line.debugDescription))")
        }
    }

    deinit { stop() }

    /// Ends the server: the provider is unreachable from then on (connections are refused).
    /// SIGKILL: the test process may block SIGTERM (`Application.blockTerminationSignals`), and a
    /// child inherits its mask; the end of input may not come either, when another child started
    /// meanwhile holds the pipe's write end.
    public func stop() {
        if process.isRunning {
            try? input.fileHandleForWriting.close()
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Serves the key set of `keyIDs` (of `TestSigningKeys.shared`) from now on.
    public func serve(_ keyIDs: [String]) throws {
        try write("keys.json", try TestSigningKeys.shared().keySet(keyIDs))
    }

    /// Serves `text` as the key set, whatever it is.
    public func serve(raw text: String) throws { try write("keys.json", text) }

    public func answer(status: Int) throws { try write("status", String(status)) }

    public func cacheControl(_ value: String?) throws {
        if let value { try write("cache-control", value) } else { try? FileManager.default.removeItem(atPath: directory + "/cache-control") }
    }

    /// How many requests the server has answered (or is answering).
    public var requestCount: Int {
        guard let text = try? String(contentsOfFile: directory + "/requests.log", encoding: .utf8) else { return 0 }
        return text.split(separator: "\n").count
    }

    private func write(_ name: String, _ text: String) throws {
        // Renamed into place: the server never reads half a file.
        let path = directory + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path + ".new"))
        guard rename(path + ".new", path) == 0 else { throw TestFailure("rename \(path): \(errno)") }
    }
}

/// RSA 2048 keys (`key-1`, `key-2`, `key-3`), made once per test process by the `openssl`
/// command, their key set (JWKS) and RS256 ID tokens signed with them.
public struct TestSigningKeys: Sendable {
    public static let keyIDs = ["key-1", "key-2", "key-3"]
    public let directory: String
    /// Each key's JWK.
    private let keys: [String: String]

    public static func shared() throws -> TestSigningKeys { try made.get() }
    private static let made = Result { try TestSigningKeys.make() }

    private static func make() throws -> TestSigningKeys {
        let directory = try FileSystem.createTemporaryDirectory(prefix: "signing-keys")
        var keys: [String: String] = [:]
        for keyID in keyIDs {
            try run("/usr/bin/openssl", ["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", keyID + ".pem"], in: directory)
            let line = try run("/usr/bin/openssl", ["rsa", "-in", keyID + ".pem", "-noout", "-modulus"], in: directory)
            let modulus = try SigningKeys.bytes(
                hex: line.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "Modulus=", with: ""))
            keys[keyID] = #"{"kty": "RSA", "kid": "\#(keyID)", "use": "sig", "alg": "RS256", "n": "\#(Self.base64URL(modulus))", "e": "AQAB"}"#
        }
        return TestSigningKeys(directory: directory, keys: keys)
    }

    /// The JWKS document of `keyIDs`.
    public func keySet(_ keyIDs: [String]) throws -> String {
        let entries = try keyIDs.map { keyID in
            guard let key = keys[keyID] else { throw TestFailure("no key \(keyID)") }
            return key
        }
        return #"{"keys": ["# + entries.joined(separator: ", ") + "]}"
    }

    /// A compact JWS of `claims` signed RS256 by `keyID` (whose `kid` the header names, or `headerKeyID`).
    public func token(_ claims: String, keyID: String = "key-1", headerKeyID: String? = nil, algorithm: String = "RS256") throws -> String {
        let header = #"{"alg": "\#(algorithm)", "kid": "\#(headerKeyID ?? keyID)", "typ": "JWT"}"#
        let input = base64URL(Array(header.utf8)) + "." + base64URL(Array(claims.utf8))
        let name = "input-\(UInt64.random(in: 0...UInt64.max))"
        try Data(input.utf8).write(to: URL(fileURLWithPath: directory + "/" + name))
        defer {
            unlink(directory + "/" + name)
            unlink(directory + "/" + name + ".sig")
        }
        try run("/usr/bin/openssl", ["dgst", "-sha256", "-sign", keyID + ".pem", "-out", name + ".sig", name], in: directory)
        guard let signature = FileManager.default.contents(atPath: directory + "/" + name + ".sig") else { throw TestFailure("no signature") }
        return input + "." + base64URL([UInt8](signature))
    }

    /// An ID token's claims as the providers write them: `iss`, `aud`, `sub`, `exp`, `iat`, then `extra`.
    public static func claims(
        issuer: String, audience: String, subject: String, expiresIn: Double = 600, extra: [String: String] = [:]
    ) -> String {
        let now = Int(Date().timeIntervalSince1970)
        var fields = [
            #""iss": "\#(issuer)""#, #""aud": "\#(audience)""#, #""sub": "\#(subject)""#, #""exp": \#(now + Int(expiresIn))"#, #""iat": \#(now - 5)"#,
            // Unique, as the providers' are: two tokens made in one second are two tokens.
            #""jti": "\#(UUID().uuidString)""#,
        ]
        for (name, json) in extra.sorted(by: { $0.key < $1.key }) { fields.append(#""\#(name)": \#(json)"#) }
        return "{" + fields.joined(separator: ", ") + "}"
    }

    public func base64URL(_ bytes: [UInt8]) -> String { Self.base64URL(bytes) }

    public static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
