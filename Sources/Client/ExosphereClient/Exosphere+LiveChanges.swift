import Foundation

/// One change of the signed-in user, from any device, as `Exosphere.liveChanges()` delivers it.
public enum LiveChange: Sendable, Equatable {
    /// The profile changed: the user as the server has them now.
    case profile(User)
    /// An image was added (from this device or another).
    case imageAdded(UserImage)
    /// An image was deleted.
    case imageDeleted(id: String)
    /// The stream was away longer than the server keeps changes (10 minutes), or left more
    /// unread than the server holds for it (256 KiB): reload what you show. The sequence goes on
    /// from there (it reconnects without `Last-Event-ID` when the server ended the stream).
    case resync
    /// This session ended (signed out elsewhere, a password change, revoked): the client is
    /// signed out, and the sequence ends after this element.
    case sessionEnded
}

extension Exosphere {
    /// The signed-in user's changes as they happen (`GET /users/me/events`), for as long as the
    /// iteration runs. When the connection drops or the server restarts, it reconnects with the
    /// last event's id (nothing missed, nothing repeated), waiting a little longer after each
    /// failure in a row (`RetryPolicy.networkRetryDelay` doubled up to 30 s), and as `Retry-After`
    /// says on `503`. A `profile` change also refreshes `currentUser`.
    ///
    /// Ends after `.sessionEnded`, and throws `not_signed_in`, `401` (the session is over: the
    /// client signs out) or `501 events_unavailable` (the deployment cannot stream); cancel the
    /// task iterating it to stop. Changes start from the moment it first connects.
    public func liveChanges() -> AsyncThrowingStream<LiveChange, any Error> {
        AsyncThrowingStream { continuation in
            let task = Task { await self.streamLiveChanges(into: continuation) }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// How long a live stream may go without a byte before it is taken for dead (the server sends
    /// a comment every 25 s by default).
    static let liveIdleTimeout: TimeInterval = 75

    private func streamLiveChanges(into continuation: AsyncThrowingStream<LiveChange, any Error>.Continuation) async {
        var last: String?
        var failures = 0
        let policy = configuration.retryPolicy
        while !Task.isCancelled {
            guard let token = currentToken else {
                continuation.finish(throwing: ExosphereError.notSignedIn)
                return
            }
            var headers = ["Accept": "text/event-stream"]
            if let last { headers["Last-Event-ID"] = last }
            var pause = min(30, policy.networkRetryDelay * Double(1 << min(failures, 10)))
            do {
                let parts = try transport.stream(
                    APIRequest("GET", "/users/me/events", headers: headers), token: token, idleTimeout: Exosphere.liveIdleTimeout)
                var parser = ServerSentEvents()
                var status = 0
                var retryAfter: TimeInterval?
                var problem = Data()
                for try await part in parts {
                    switch part {
                    case .head(let code, let responseHeaders):
                        status = code
                        retryAfter = responseHeaders["retry-after"].flatMap { TimeInterval($0.trimmingCharacters(in: .whitespaces)) }
                    case .bytes(let data) where status != 200:
                        problem += data
                    case .bytes(let data):
                        for event in parser.feed(data) {
                            failures = 0
                            if let id = event.id { last = id }
                            guard let change = try Exosphere.liveChange(event) else { continue }
                            // What came before is reloaded: the next connection starts from now.
                            if change == .resync { last = nil }
                            continuation.yield(change)
                            if change == .sessionEnded {
                                end(announcing: .sessionExpired, ifToken: token)
                                continuation.finish()
                                return
                            }
                            if case .profile = change { _ = try? await fetchUser() }
                        }
                    }
                }
                if status != 200 {
                    let error = ExosphereError(status: status, body: problem, retryAfter: retryAfter)
                    guard status == 503 || status == 429 else {
                        if status == 401 { end(announcing: .sessionExpired, ifToken: token) }
                        continuation.finish(throwing: error)
                        return
                    }
                    pause = retryAfter ?? policy.defaultRetryAfter
                }
                // The body ended (a server shutting down ends its streams): reconnect.
                failures += 1
            } catch is CancellationError {
                break
            } catch let error as ExosphereError where error.code == .networkError {
                failures += 1
            } catch {
                continuation.finish(throwing: error)
                return
            }
            do {
                try await Task.sleep(nanoseconds: UInt64(max(0, pause) * 1_000_000_000))
            } catch {
                break
            }
        }
        continuation.finish()
    }

    private static func liveChange(_ event: ServerSentEvents.Event) throws -> LiveChange? {
        func json() throws -> JSONValue {
            do {
                return try JSONValue.parse(Data(event.data.utf8))
            } catch {
                throw ExosphereError.invalidResponse("the \(event.name) event is not JSON: \(error)")
            }
        }
        switch event.name {
        case "profile": return .profile(try User(json: try json(), etag: nil))
        case "image_added": return .imageAdded(try UserImage(json: try json()))
        case "image_deleted":
            guard let id = try json()["id"]?.stringValue else { throw ExosphereError.invalidResponse("image_deleted has no id") }
            return .imageDeleted(id: id)
        case "resync": return .resync
        case "session_ended": return .sessionEnded
        default: return nil  // a newer server's event this client does not know
        }
    }
}

/// A `text/event-stream` parser (the WHATWG rules this server's streams need): lines of
/// `field: value`, events ended by a blank line, `:` comments ignored.
struct ServerSentEvents {
    struct Event: Equatable {
        var id: String?
        var name: String
        var data: String
    }

    private var buffer = Data()

    /// The complete events in what came so far.
    mutating func feed(_ bytes: Data) -> [Event] {
        buffer += bytes
        var events: [Event] = []
        while let end = buffer.range(of: Data("\n\n".utf8)) {
            let block = String(decoding: buffer[buffer.startIndex..<end.lowerBound], as: UTF8.self)
            buffer = Data(buffer[end.upperBound...])
            var event = Event(id: nil, name: "message", data: "")
            var hasData = false
            for line in block.split(separator: "\n", omittingEmptySubsequences: false) where !line.hasPrefix(":") {
                let field = line.prefix { $0 != ":" }
                var value = line.dropFirst(field.count)
                if value.hasPrefix(":") { value = value.dropFirst() }
                if value.hasPrefix(" ") { value = value.dropFirst() }
                switch field {
                case "id": event.id = String(value)
                case "event": event.name = String(value)
                case "data":
                    event.data += hasData ? "\n" + value : String(value)
                    hasData = true
                default: continue
                }
            }
            if hasData { events.append(event) }
        }
        return events
    }
}
