import Accounts
import HTTP
import HTTPServer
import Images
import JSON
import LiveEvents
import FoundationEssentials
import Postgres

/// `GET /users/me/events`: the user's changes as Server-Sent Events, from whichever instance made
/// them (`LiveEventHub`): `profile`, `image_added`, `image_deleted`, `session_ended` (then the
/// stream ends), and `resync` when a `Last-Event-ID` is older than the kept history.
struct EventsController: Controller {
    let accounts: AccountService
    /// Nil behind a pooler in transaction mode, where nothing can `LISTEN`.
    let hub: LiveEventHub?

    static func declare(_ routes: inout Routes<Self>) {
        // Each open stream holds the server's memory (up to 256 KiB unread): a few per user.
        routes.user(.get, "/users/me/events", openPerUser: routes.settings.maxStreamsPerUser, use: Self.events)
    }

    @Sendable func events(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let (session, user, request) = (signedIn.session, signedIn.user, call.request)
        guard let hub else {
            throw Problem(
                status: .notImplemented, code: .eventsUnavailable,
                detail:
                    "Live events need a database connection that can LISTEN; this deployment reaches PostgreSQL through a pooler in transaction mode."
            )
        }
        let after: Int64
        if let header = request.headers["Last-Event-ID"] {
            guard let number = Int64(header.trimmingCharacters(in: " \t")), number >= 0 else {
                throw Problem(status: .badRequest, code: .invalidLastEventID, detail: "Last-Event-ID must be an event id this stream sent.")
            }
            after = number
        } else {
            after = try accounts.userEvents.latestEventNumber(of: user.id)
        }
        var response = Response(status: .ok)
        response.headers.add(name: "Content-Type", value: "text/event-stream; charset=utf-8")
        response.headers.add(name: "Cache-Control", value: "no-store")
        // nginx buffers a response unless told not to; haproxy and others pass it on as it comes.
        response.headers.add(name: "X-Accel-Buffering", value: "no")
        guard request.method != .head else { return response }
        response.file = try hub.subscribe(userID: user.id.lowercasedText, sessionID: session.id.lowercasedText, after: after)
        return response
    }
}

/// What the hub reads: a user's kept events rendered as the API shows them (`profile` as
/// `GET /users/me` returns the user, `image_added` as the image list shows an image).
struct DatabaseEventSource: LiveEventSource {
    let accounts: AccountService
    let images: ImageService
    let signer: URLSigner
    /// The listening connection's settings: the database's, under its own application name.
    let listener: PostgresConfiguration
    /// This instance, in the database's marks of users with streams (`live_streams`).
    let instance = UUID()
    /// Events read per catch-up round.
    static let batch = 500

    func listenerConnection() throws -> PostgresConnection {
        try PostgresConnection(configuration: listener)
    }

    func watch(userIDs: [String]) throws {
        try accounts.userEvents.watchLiveEvents(of: userIDs.compactMap { UUID(uuidString: $0) }, instance: instance)
    }

    func unwatch(userIDs: [String]) throws {
        try accounts.userEvents.unwatchLiveEvents(of: userIDs.compactMap { UUID(uuidString: $0) }, instance: instance)
    }

    func sweep(userIDs: [String], sessions: [String]) throws -> (latest: [String: Int64], liveSessions: Set<String>) {
        try accounts.userEvents.liveEventSweep(users: userIDs, sessions: sessions)
    }

    func catchUp(userID: String, after: Int64, sessions: [String]) throws -> CatchUp {
        guard let id = UUID(uuidString: userID) else { return CatchUp(events: [], reached: after, firstKept: nil, more: false, liveSessions: []) }
        let backlog = try accounts.userEvents.eventBacklog(
            of: id, after: after, limit: Self.batch, sessions: sessions.compactMap { UUID(uuidString: $0) })
        var events: [LiveEvent] = []
        // A `profile` event shows the user as they are now, so every one in a batch shows the same:
        // only the batch's last is sent (the user rendered once, up to 64 KiB of custom fields),
        // and a loop of profile writes costs a reader one user a round, not one a write.
        let lastProfile = backlog.events.last { $0.kind == .profile }?.number
        // A client that reads the user again on this event (the Swift client does) must get what
        // the event says: this instance's session cache may serve the user as it was, up to its
        // staleness bound after a change committed elsewhere (or by SQL), and with a `304` the
        // client would keep the old copy. What this read saw committed is what lookups read now.
        if lastProfile != nil { accounts.sessionCache.invalidate(users: [id]) }
        for record in backlog.events {
            var writer = JSONWriter(capacity: 512)
            switch record.kind {
            case .profile:
                guard record.number == lastProfile, let user = backlog.user else { continue }
                UserJSON.write(user, into: &writer)
            case .imageAdded:
                guard let imageID = record.objectID else { continue }
                let image: StoredImage
                do {
                    image = try images.find(imageID, userID: id)
                } catch let error as ImageError where error.code == .notFound {
                    continue  // Deleted since: its image_deleted follows.
                }
                ImageJSON.write(image, signer: signer, into: &writer)
            case .imageDeleted:
                guard let imageID = record.objectID else { continue }
                writer.beginObject()
                writer.key("id"); writer.string(imageID.lowercasedText)
                writer.endObject()
            }
            events.append(LiveEvent(id: record.number, name: record.kind.rawValue, data: writer.bytes))
        }
        let reached = backlog.truncated ? backlog.events.last?.number ?? after : max(backlog.latest, backlog.events.last?.number ?? after)
        return CatchUp(
            events: events, reached: reached, firstKept: backlog.events.first?.number, more: backlog.truncated,
            liveSessions: Set(backlog.liveSessions.map(\.lowercasedText)))
    }
}
