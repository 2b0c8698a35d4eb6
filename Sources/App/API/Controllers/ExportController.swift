import Accounts
import Cryptography
import FoundationEssentials
import Glibc
import HTTP
import HTTPServer
import Images
import JSON
import Zip

/// `GET /users/me/export`: everything the account holds, as a ZIP streamed as it is written
/// (`ExportArchive`): `user.json` (the profile, sessions, activity and image metadata) and
/// `images/<id>.<format>`, the originals as uploaded. Once an hour per user; the export is recorded
/// in the user's activity and the account's address gets a notice.
struct ExportController: Controller {
    let accounts: AccountService
    let images: ImageService
    let signer: URLSigner

    static func declare(_ routes: inout Routes<Self>) {
        // Once an hour per user. `HEAD` answers the status a `GET` would get (`429` within the
        // hour) and costs nothing: it counts nothing and builds nothing.
        routes.user(
            .get, "/users/me/export",
            throttle: Throttling(.export, [.perUser], checksOnly: { _, call in call.request.method == .head }), use: Self.export)
    }

    @Sendable func export(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let (session, user, request) = (signedIn.session, signedIn.user, call.request)
        guard request.method != .head else {
            // The archive's length is known only once it is laid out, which is the work a `HEAD`
            // must not cost: it goes without (RFC 9110 §9.3.2), as a body of unknown length.
            var response = Self.head()
            response.file = UnknownLength()
            return response
        }
        try accounts.recovery.recordExport(of: user, origin: call.origin)
        let sessions = try accounts.sessions.sessions(of: user.id)
        var events: [ActivityEvent] = []
        var eventCursor: KeysetCursor?
        repeat {
            let page = try accounts.recovery.activity(userID: user.id, after: eventCursor, limit: 100)
            events += page.events
            eventCursor = page.next
        } while eventCursor != nil
        var stored: [StoredImage] = []
        var imageCursor: KeysetCursor?
        repeat {
            let page = try images.list(userID: user.id, order: .oldest, after: imageCursor, limit: 100)
            stored += page.images
            imageCursor = page.next
        } while imageCursor != nil

        var writer = JSONWriter(capacity: 4096)
        writer.beginObject()
        writer.key("exportedAt"); writer.string(UserJSON.timestamp(Date()))
        writer.key("user"); UserJSON.write(user, into: &writer)
        writer.key("sessions")
        writer.beginArray()
        for entry in sessions { UserJSON.writeSessionEntry(entry, current: entry.id == session.id, into: &writer) }
        writer.endArray()
        writer.key("activity")
        RecoveryController.write(ActivityPage(events: events, next: nil), into: &writer)
        writer.key("images")
        writer.beginArray()
        for image in stored { ImageJSON.write(image, signer: signer, into: &writer) }
        writer.endArray()
        writer.endObject()
        let json = writer.bytes

        var entries = [ZipLayout.Entry(name: "user.json", size: json.count)]
        var contents = [ExportArchive.Content.bytes(json)]
        for image in stored {
            entries.append(ZipLayout.Entry(name: "images/\(image.id.lowercasedText).\(image.format.rawValue)", size: image.byteSize))
            contents.append(.image(image.id))
        }
        var now = time(nil)
        var civil = tm()
        gmtime_r(&now, &civil)
        let layout: ZipLayout
        do {
            layout = try ZipLayout(
                entries,
                modified: (
                    Int(civil.tm_year) + 1900, Int(civil.tm_mon) + 1, Int(civil.tm_mday), Int(civil.tm_hour), Int(civil.tm_min), Int(civil.tm_sec)
                ))
        } catch {
            throw Problem(
                status: .contentTooLarge, code: .exportTooLarge,
                detail: "The account holds more than one archive can (4 GiB, 65,534 files); ask the operator for a copy.")
        }
        var response = Self.head()
        response.file = ExportArchive(layout: layout, contents: contents, images: images)
        return response
    }

    /// The answer's status and headers, without its body.
    private static func head() -> Response {
        let day = UserJSON.timestamp(Date()).prefix(10)
        var response = Response(status: .ok)
        response.headers.add(name: "Content-Type", value: "application/zip")
        response.headers.add(name: "Content-Disposition", value: "attachment; filename=\"exosphere-export-\(day).zip\"")
        response.headers.add(name: "Cache-Control", value: "no-store")
        return response
    }

    /// A body whose length is not known, for a `HEAD` (never sent).
    private final class UnknownLength: ResponseEventStream {
        func next(_ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) { completion(.success([])) }
    }
}
