import JSON
import SocketClient
import TestSupport
import Testing

/// A client of `GET /users/me/events` on a socket of its own: reads the head, then the chunked
/// body as it comes, one Server-Sent Event at a time. Every read waits at most `timeout`.
final class EventStreamReader {
    struct Event: Equatable, CustomStringConvertible {
        var id: String?
        var name: String
        var data: String
        var json: JSONValue { get throws { try JSONParser.parse(Array(data.utf8)) } }
        var description: String { "\(id.map { "#\($0) " } ?? "")\(name) \(data)" }
    }

    let connection: HTTPClientConnection
    let status: Int
    let headers: HTTPClientResponse
    /// The decoded body not yet parsed into events.
    private var text: [UInt8] = []
    private(set) var ended = false
    /// Comment lines seen (heartbeats).
    private(set) var comments = 0
    /// The last `retry:` the stream sent, in milliseconds.
    private(set) var retry: Int?

    /// A `receiveBuffer` makes a slow reader (`HTTPClientConnection`). `timeout` bounds each
    /// read; `lifetime` the whole stream, so that heartbeats cannot keep a reader waiting for an
    /// event that never comes.
    init(
        port: Int, token: String, lastEventID: String? = nil, timeout: Duration = .seconds(5), lifetime: Duration = .seconds(120),
        receiveBuffer: Int32? = nil
    ) throws {
        connection = try HTTPClientConnection(
            port: port, timeout: timeout, deadline: .now + lifetime, receiveBuffer: receiveBuffer)
        var head = "GET /users/me/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\nAuthorization: Bearer \(token)\r\n"
        if let lastEventID { head += "Last-Event-ID: \(lastEventID)\r\n" }
        try connection.send(head + "\r\n")
        headers = try connection.readResponse(head: true)
        status = headers.status
    }

    func close() { connection.close() }

    /// The next event (comments are counted, not returned), or nil once the body ended; throws
    /// when nothing complete came within the timeout.
    func next() throws -> Event? {
        while true {
            if let event = takeEvent() { return event }
            if ended { return nil }
            try decodeChunk()
        }
    }

    /// Reads until an event or a comment comes: the event, or nil after a comment (or the end).
    func nextEventOrComment() throws -> Event? {
        let before = comments
        while true {
            if let event = takeEvent() { return event }
            if ended || comments > before { return nil }
            try decodeChunk()
        }
    }

    /// Events until `count` came or the body ended.
    func next(_ count: Int) throws -> [Event] {
        var events: [Event] = []
        while events.count < count, let event = try next() { events.append(event) }
        return events
    }

    /// Reads until the body ends; the events on the way.
    func rest() throws -> [Event] {
        var events: [Event] = []
        while let event = try next() { events.append(event) }
        return events
    }

    private func takeEvent() -> Event? {
        while let end = find(text, [0x0A, 0x0A]) {
            let block = String(decoding: text[..<end], as: UTF8.self)
            text.removeFirst(end + 2)
            var event = Event(id: nil, name: "message", data: "")
            var hasField = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) {
                if line.hasPrefix(":") {
                    comments += 1
                    continue
                }
                let (field, value) =
                    line.firstIndex(of: ":").map { (String(line[..<$0]), String(line[line.index(after: $0)...]).trimmingPrefixSpace()) }
                    ?? (String(line), "")
                switch field {
                case "id": event.id = value
                case "event": event.name = value
                case "data": event.data += event.data.isEmpty ? value : "\n" + value
                case "retry": retry = Int(value)
                default: continue
                }
                if field != "retry" { hasField = true }
            }
            if hasField { return event }
        }
        return nil
    }

    /// Reads one chunk of the chunked body into `text`; at the last chunk, marks the end.
    private func decodeChunk() throws {
        let crlf: [UInt8] = [0x0D, 0x0A]
        var lineEnd = find(connection.buffer, crlf)
        while lineEnd == nil {
            guard try connection.fill() else { throw TestFailure("the stream closed inside a chunk size") }
            lineEnd = find(connection.buffer, crlf)
        }
        let sizeText = String(decoding: connection.buffer[..<lineEnd!], as: UTF8.self)
        guard let size = Int(sizeText, radix: 16) else { throw TestFailure("bad chunk size '\(sizeText)'") }
        while connection.buffer.count < lineEnd! + 2 + size + 2 {
            guard try connection.fill() else { throw TestFailure("the stream closed inside a chunk") }
        }
        let start = lineEnd! + 2
        text += connection.buffer[start..<(start + size)]
        guard connection.buffer[start + size] == 0x0D, connection.buffer[start + size + 1] == 0x0A else {
            throw TestFailure("a chunk does not end with CRLF")
        }
        connection.consume(start + size + 2)
        if size == 0 { ended = true }
    }
}

extension String {
    fileprivate func trimmingPrefixSpace() -> String { hasPrefix(" ") ? String(dropFirst()) : self }
}
