import Files
import Foundation
import Glibc

/// aiosmtpd in a child process (`smtp_server.py` beside this file, run by Debian's python3, which
/// has the python3-aiosmtpd package), listening on a port of its choosing (or `port`).
public final class TestSMTPServer: @unchecked Sendable {
    public static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("smtp_server.py").path

    public let port: Int
    /// Where the server saves each message it accepts, `<n>.eml` and `<n>.json`, from 1.
    public let maildir: String
    private let process = Process()
    /// Closing it (or our exiting) ends the server, even if `stop()` is never called.
    private let input = Pipe()
    private let logPath: String

    public init(_ options: [String] = [], host: String = "127.0.0.1", port: Int = 0) throws {
        maildir = try FileSystem.createTemporaryDirectory(prefix: "mail-test")
        logPath = maildir + ".log"
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else { throw TestFailure("cannot create \(logPath)") }
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = [Self.script, "--host", host, "--port", String(port), "--maildir", maildir] + options
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle(forWritingAtPath: logPath)
        try process.run()
        let line = try Self.readLine(output.fileHandleForReading.fileDescriptor, within: .seconds(30))
        self.port = line.hasPrefix("port ") ? Int(line.dropFirst(5)) ?? 0 : 0
        guard self.port > 0 else {
            let log = log
            stop()
            throw TestFailure(
                "smtp_server.py did not start (stdout: \(line.debugDescription)); is python3-aiosmtpd installed for /usr/bin/python3? Its log:\n\(log)"
            )
        }
    }

    deinit { stop() }

    public var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "(no log)" }

    public func stop() {
        if process.isRunning {
            // End of input is the server's cue to exit; SIGTERM too, now that it unblocks it.
            try? input.fileHandleForWriting.close()
            process.terminate()
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: maildir)
        try? FileManager.default.removeItem(atPath: logPath)
    }

    /// What the server recorded of the `number`th message it accepted.
    public func delivery(_ number: Int) throws -> Delivery {
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(maildir)/\(number).json"))
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(Delivery.self, from: data)
    }

    /// The bytes of the `number`th message, as the server received them after un-stuffing.
    public func message(_ number: Int) throws -> [UInt8] {
        try FileReader.bytes("\(maildir)/\(number).eml")
    }

    public var deliveryCount: Int { ((try? FileSystem.entries(of: maildir)) ?? []).filter { $0.hasSuffix(".eml") }.count }

    /// The messages received so far, oldest first, as text.
    public func messages() -> [String] {
        (0..<deliveryCount).compactMap { try? message($0 + 1) }.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Waits until `count` received messages match `predicate`; returns those (throws after `timeout` seconds).
    public func waitForMessages(count: Int = 1, timeout: Double = 20, where predicate: (String) -> Bool = { _ in true }) throws -> [String] {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while true {
            let matching = messages().filter(predicate)
            if matching.count >= count { return matching }
            guard ContinuousClock.now < deadline else {
                throw TestFailure("\(matching.count) of \(count) expected mails arrived within \(timeout) s")
            }
            usleep(20_000)
        }
    }

    /// One line from `descriptor`, without its newline; what came before the end or the deadline
    /// otherwise (a child process's "port N", here and in `TestIdentityProvider`).
    static func readLine(_ descriptor: Int32, within limit: Duration) throws -> String {
        let deadline = ContinuousClock.now + limit
        var bytes: [UInt8] = []
        while !bytes.contains(UInt8(ascii: "\n")), ContinuousClock.now < deadline {
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 100) >= 0 || errno == EINTR else { throw TestFailure("poll: \(errno)") }
            guard entry.revents != 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 256)
            let count = read(descriptor, &chunk, chunk.count)
            if count <= 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }
}

/// What smtp_server.py writes beside each message: the envelope, the session, and the message
/// as Python's `email` package understands it.
public struct Delivery: Decodable {
    public let mailFrom: String
    public let mailOptions: [String]
    public let rcptTos: [String]
    public let login: String?
    public let authMechanism: String?
    public let tls: Bool
    public let summary: MessageSummary
}

/// A message as a mail reader sees it: decoded headers, decoded parts, the parser's complaints.
public struct MessageSummary: Decodable {
    public struct Mailbox: Decodable, Equatable {
        public let name: String
        public let address: String

        public init(name: String, address: String) {
            self.name = name
            self.address = address
        }
    }

    public struct Part: Decodable {
        public let type: String
        public let charset: String?
        public let encoding: String?
        public let content: String
        public let defects: [String]
    }

    public let subject: String
    public let from: Mailbox?
    public let to: Mailbox?
    public let date: String?
    public let messageId: String?
    public let contentType: String
    public let defects: [String]
    public let parts: [Part]
    public let longestLine: Int
    public let bareLineEnds: Int
    public let eightBit: Bool

    /// Every defect Python found, in the headers, the structure or a part.
    public var allDefects: [String] { defects + parts.flatMap(\.defects) }

    /// Runs `smtp_server.py --summarize` on `bytes`.
    public static func of(_ bytes: [UInt8]) throws -> MessageSummary {
        let directory = try FileSystem.createTemporaryDirectory(prefix: "mail-summary")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/message.eml"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let output = try run("/usr/bin/python3", [TestSMTPServer.script, "--summarize", path])
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(MessageSummary.self, from: Data(output.utf8))
    }
}

/// A test helper's failure, said in one line.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Runs a command to its end and returns its standard output; throws with its error output if it fails.
///
/// The child writes to files it opens itself (`posix_spawn`'s file actions), never to a pipe of
/// this process: a pipe's write end would be inherited by any child another test starts at the
/// same moment (a key server, an SMTP server that lives for the whole suite), and a read to the
/// end of the pipe would then wait for that child, not for this one.
@discardableResult
public func run(_ executable: String, _ arguments: [String], in directory: String? = nil) throws -> String {
    let scratch = try makeTemporaryDirectory("exo-run")
    defer { _ = try? FileManager.default.removeItem(atPath: scratch) }
    let (outputPath, errorPath) = (scratch + "/stdout", scratch + "/stderr")
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    // In `directory`: through the shell, which changes to it and then becomes the command.
    let command = directory.map { ["/bin/sh", "-c", #"cd "$0" && exec "$@""#, $0, executable] + arguments } ?? [executable] + arguments
    let argv = command.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, command[0], &actions, nil, argv, environ)
    guard spawned == 0 else { throw TestFailure("\(executable): posix_spawn: \(String(cString: strerror(spawned)))") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
    let output = try String(contentsOfFile: outputPath, encoding: .utf8)
    // Exited (the low 7 bits are 0) with status 0.
    guard status & 0x7F == 0 && (status >> 8) & 0xFF == 0 else {
        let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
        throw TestFailure("\(executable) \(arguments.joined(separator: " ")) failed (wait status \(status)): \(errors)")
    }
    return output
}
