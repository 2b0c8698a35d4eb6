import API
import Foundation
import Glibc
import JSON
import LiveEvents
import TestSupport
import Testing

/// What an event stream may hold of the server (`../shared/API.md`, "Ways in, recent
/// authentication, limits"): a few streams per user, and a bounded amount of unread events each.
@Suite(.testThreads, .serialized)
struct EventLimitsAPITests {
    /// A user holds at most `--max-streams-per-user` streams open (`429 too_many_streams` with
    /// `Retry-After` beyond, another user unaffected), however many are asked for at once; a
    /// stream that ends gives its place back.
    @Test func aUserHoldsAtMostTheirStreamsEvenWhenAskingAtOnce() throws {
        let server = try EventsAPITests.server("limits_open")
        defer { server.shutdown() }
        let account = try server.register()
        let other = try server.register()
        let streams = OpenStreams()
        try onThreads(12) { _ in streams.add(try EventStreamReader(port: server.port, token: account.token)) }
        defer { streams.closeAll() }
        #expect(streams.statuses.sorted() == Array(repeating: 200, count: 5) + Array(repeating: 429, count: 7))
        let refused = try server.call("GET", "/users/me/events", token: account.token)
        #expect(refused.status == 429 && refused.code == "too_many_streams", "\(refused.text)")
        #expect(refused.header("Retry-After") == "10")
        let theirs = try EventStreamReader(port: server.port, token: other.token)
        defer { theirs.close() }
        #expect(theirs.status == 200, "another user's streams are their own")

        // One closed: its place comes back once the server has seen it go.
        streams.closeOne()
        var reopened: EventStreamReader?
        try waitUntil(timeout: .seconds(10), "a place given back by the closed stream") {
            let stream = try EventStreamReader(port: server.port, token: account.token)
            if stream.status == 200 { reopened = stream } else { stream.close() }
            return stream.status == 200
        }
        reopened?.close()
    }

    /// A client that does not read: once its stream holds 256 KiB for it, the stream says
    /// `resync` and ends, and the server lets what it held go; the kernel holds little for it. Each write's `profile` event is
    /// the whole user (about 56 KiB of custom fields here), and the events of a round are one.
    @Test func aStreamThatIsNotReadSaysResyncAndEnds() throws {
        let server = try EventsAPITests.server("limits_pending")
        defer { server.shutdown() }
        let account = try server.register()
        let filler = String(repeating: "x", count: 4_000)
        let fields = (0..<14).map { #""note\#($0)": "\#(filler)""# }.joined(separator: ", ")
        let filled = try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {\#(fields)}}"#)
        try #require(filled.status == 200, "\(filled.text)")
        let hub = try #require(server.app.liveEvents)
        // 4 KiB of receive buffer: the kernel holds little for it, and the rest waits in the hub.
        let slow = try EventStreamReader(port: server.port, token: account.token, timeout: .seconds(20), receiveBuffer: 4096)
        defer { slow.close() }
        try #require(slow.status == 200)
        var writes = 0
        try waitUntil(timeout: .seconds(60), "the unread stream overflows") {
            writes += 1
            let toggled = try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"flag": \#(writes % 2 == 0)}}"#)
            try #require(toggled.status == 200)
            return hub.statistics.overflowed == 1
        }
        // The kernel holds little more than the stream's own cap for it (`SO_SNDBUF` 32 KiB, not
        // the megabytes its buffer would grow to): the stream overflows after a few writes.
        #expect(writes <= 15, "\(writes) writes of 56 KiB before the unread stream overflowed")
        #expect(hub.statistics.pendingBytes <= 256 * 1024, "what it held went")
        // Read now: whatever reached the socket, then `resync`, then the end of the body.
        let events = try slow.rest()
        #expect(events.last?.name == "resync", "\(events.suffix(2).map(\.name))")
        #expect(events.dropLast().allSatisfy { $0.name == "profile" })
        #expect(slow.ended)
    }
}

extension EventLimitsAPITests {
    /// Many unread streams share what the instance lets them hold (`maxTotalPendingBytes`, here
    /// 320 KiB for 4 streams, 80 KiB each): together they never hold more, where each alone
    /// could hold 256 KiB, and each says `resync` and ends once past its share.
    @Test func unreadStreamsShareWhatTheInstanceHolds() throws {
        let server = try TestServer("events_limits_share") { configuration in
            configuration.thumbnails.helpers = 0
            configuration.liveEvents.maxTotalPendingBytes = 320 * 1024
            configuration.liveEvents.minimumPendingBytes = 80 * 1024
        }
        defer { server.shutdown() }
        let account = try server.register()
        let filler = String(repeating: "x", count: 4_000)
        let fields = (0..<14).map { #""note\#($0)": "\#(filler)""# }.joined(separator: ", ")
        try #require(try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {\#(fields)}}"#).status == 200)
        let hub = try #require(server.app.liveEvents)
        let streams = try (0..<4).map { _ in
            try EventStreamReader(port: server.port, token: account.token, timeout: .seconds(20), receiveBuffer: 4096)
        }
        defer { streams.forEach { $0.close() } }
        var writes = 0
        var largest = 0
        try waitUntil(timeout: .seconds(60), "the unread streams overflow") {
            writes += 1
            let toggled = try server.call("PATCH", "/users/me", token: account.token, json: #"{"data": {"flag": \#(writes % 2 == 0)}}"#)
            try #require(toggled.status == 200)
            let figures = hub.statistics
            largest = max(largest, figures.pendingBytes)
            return figures.overflowed == 4
        }
        #expect(largest <= 320 * 1024, "the streams held \(largest) bytes together after some of \(writes) writes")
        for stream in streams { #expect(try stream.rest().last?.name == "resync") }
    }
}

/// Streams opened by several threads: the statuses they got, and the open ones, closed at the end.
private final class OpenStreams: @unchecked Sendable {
    private let lock = NSLock()
    private var open: [EventStreamReader] = []
    private var answered: [Int] = []

    func add(_ stream: EventStreamReader) {
        lock.withLock {
            answered.append(stream.status)
            if stream.status == 200 { open.append(stream) } else { stream.close() }
        }
    }

    var statuses: [Int] { lock.withLock { answered } }

    func closeOne() { lock.withLock { open.removeFirst().close() } }

    func closeAll() { lock.withLock { open.forEach { $0.close() } } }
}
