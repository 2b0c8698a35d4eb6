import Foundation
import Glibc
import Synchronization
import TestSupport

/// A loopback HTTP server that answers each request with the next of its canned answers, for the
/// answers a real store gives only when something is wrong (a wrong ETag, a connection it closed).
/// Each answer says whether the connection is closed after it.
final class CannedS3Server: Sendable {
    struct Answer: Sendable {
        var text: String
        var closeAfter = false
    }

    let port: Int
    private let socket: LoopbackSocket
    private let answers: Mutex<[Answer]>
    /// Connections accepted, and the request heads received.
    let connections = Atomic<Int>(0)
    let requests = Mutex<[String]>([])

    init(_ answers: [Answer]) throws {
        socket = try LoopbackSocket(listening: 16)
        port = socket.port
        self.answers = Mutex(answers)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    func close() { _ = shutdown(socket.fd, Int32(SHUT_RDWR)) }

    private func serve() {
        while true {
            let connection = accept(socket.fd, nil, nil)
            guard connection >= 0 else { return }
            connections.add(1, ordering: .relaxed)
            Thread { [self] in handle(connection) }.start()
        }
    }

    private func handle(_ connection: Int32) {
        defer { Glibc.close(connection) }
        var buffer: [UInt8] = []
        while true {
            // One request: its head, then its Content-Length's bytes.
            var headEnd: Int?
            while true {
                if let end = Self.find(buffer) {
                    headEnd = end
                    break
                }
                var chunk = [UInt8](repeating: 0, count: 65_536)
                let count = recv(connection, &chunk, chunk.count, 0)
                guard count > 0 else { return }
                buffer += chunk[..<count]
            }
            let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
            let length =
                head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            while buffer.count < headEnd! + 4 + length {
                var chunk = [UInt8](repeating: 0, count: 65_536)
                let count = recv(connection, &chunk, chunk.count, 0)
                guard count > 0 else { return }
                buffer += chunk[..<count]
            }
            buffer.removeFirst(headEnd! + 4 + length)
            requests.withLock { $0.append(head) }
            guard let answer = answers.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { return }
            let bytes = Array(answer.text.utf8)
            _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if answer.closeAfter { return }
        }
    }

    private static func find(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }
}
