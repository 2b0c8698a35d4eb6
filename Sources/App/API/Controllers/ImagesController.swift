import Accounts
import FoundationEssentials
import HTTP
import HTTPServer
import Images
import JSON
import Postgres
import Thumbnails

/// The signed-in user's images: upload (raw or multipart), list, download with caching and ranges, delete.
struct ImagesController: Controller {
    let images: ImageService
    let signer: URLSigner

    /// Room for the multipart framing around the largest image.
    static let multipartOverhead = 64 * 1024

    static func declare(_ routes: inout Routes<Self>) {
        // A raw image is refused from its Content-Length alone; a multipart body may be a little larger.
        let maxBytes = routes.settings.imageMaxBytes
        let uploadLimit = Router.BodyLimit(largest: maxBytes + ImagesController.multipartOverhead) { head in
            MultipartFormData.boundary(fromContentType: head.headers["Content-Type"] ?? "") == nil
                ? maxBytes : maxBytes + ImagesController.multipartOverhead
        }
        routes.user(.post, "/users/me/images", bodyLimit: uploadLimit, use: Self.upload)
        routes.user(.get, "/users/me/images", use: Self.list)
        routes.user(.get, "/users/me/images/{id}", use: Self.download)
        routes.user(.get, "/users/me/images/{id}/thumbnail", use: Self.thumbnail)
        routes.user(.delete, "/users/me/images/{id}", use: Self.delete)
        routes.open(.get, "/images/{id}", .signedURL, execution: .loop, use: Self.signedDownload)
    }

    @Sendable func upload(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        do {
            return try store(call.request, user: signedIn.user)
        } catch let error as PostgresError where error.sqlState == .foreignKeyViolation {
            // The account was deleted between the token check and the insert.
            throw AccountsError.invalidToken
        }
    }

    private func store(_ request: Request, user: User) throws -> Response {
        let contentType = request.headers["Content-Type"] ?? ""
        let image: StoredImage
        if let boundary = MultipartFormData.boundary(fromContentType: contentType) {
            image = try request.body.withUnsafeBytes { body in
                let part = try MultipartFormData.filePart(in: body, boundary: boundary)
                let bytes = UnsafeRawBufferPointer(rebasing: body[part.range])
                let image = try images.upload(bytes, declared: try format(of: part, bytes: bytes), userID: user.id)
                images.prepareThumbnails(image, original: bytes)
                return image
            }
        } else {
            guard let format = ImageFormat(mimeType: contentType) else { throw ImagesController.unsupportedType(contentType) }
            image = try request.body.withUnsafeBytes { bytes in
                let image = try images.upload(bytes, declared: format, userID: user.id)
                images.prepareThumbnails(image, original: bytes)
                return image
            }
        }
        var response = JSONBody.response(.created) { ImageJSON.write(image, signer: signer, into: &$0) }
        response.headers.add(name: "Location", value: ImageJSON.url(of: image))
        return response
    }

    @Sendable func list(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let (request, user) = (call.request, signedIn.user)
        let parameters = try PageParameters(request)
        let page = try images.list(
            userID: user.id, order: try PageParameters.imageOrder(request), after: parameters.cursor, limit: parameters.limit)
        var response = JSONBody.response { ImageJSON.write(page, signer: signer, into: &$0) }
        response.headers.add(name: "Cache-Control", value: "private, no-cache")
        return response
    }

    @Sendable func download(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let request = call.request
        // The whole image, unless the client has it or asks for part: the store may start on it
        // while the row is read.
        let whole = request.headers["Range"] == nil && request.headers["If-None-Match"] == nil
        let (image, content) = try images.find(try ImagesController.imageID(call), userID: signedIn.user.id, openingWhole: whole)
        // The bytes behind an id never change: clients may keep them, privately, for a year.
        return try serve(image, request, cacheControl: "private, max-age=31536000, immutable", content: content)
    }

    /// `GET /users/me/images/{id}/thumbnail?size=N`: WebP when `Accept` allows it, else JPEG; the
    /// first request for a size makes it.
    @Sendable func thumbnail(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        let id = try ImagesController.imageID(call)
        let spec = try ThumbnailNegotiation.spec(size: QueryParameters(call.request.query)["size"], call.request)
        return serve(try images.thumbnail(id, userID: signedIn.user.id, spec), call.request, cacheControl: "private, max-age=31536000, immutable")
    }

    /// `GET /images/{id}?exp=…[&size=N]&sig=…`: the bytes (or that thumbnail) for whoever holds a
    /// URL the API signed, without a token (the route table checked the signature: `Call.signedURL`);
    /// shared caches may keep them until the URL expires. It runs on the event loop: the grid's hot
    /// path, a thumbnail that memory holds (its image seen within 5 s), is answered without a
    /// thread hop or a query; anything else is read on the worker pool.
    @Sendable func signedDownload(_ call: Call) async throws -> Response {
        let (request, grant) = (call.request, call.signedURL)
        let cacheControl = "public, max-age=\(grant.secondsLeft)"
        switch grant.rendition {
        case .thumbnail(let size):
            let spec = try ThumbnailNegotiation.spec(size: String(size), request)
            if let thumbnail = images.cachedThumbnail(signed: grant.id, spec) {
                return serve(thumbnail, request, cacheControl: cacheControl)
            }
            return serve(try await call.blocking { [images] in try images.thumbnail(signed: grant.id, spec) }, request, cacheControl: cacheControl)
        case .original:
            return try await call.blocking { [self] in
                let image = try images.find(signed: grant.id)
                // `--s3-redirect`: the bytes come from the store (or a CDN in front of it), not through this server.
                if let location = images.presignedURL(of: image, expires: grant.secondsLeft) {
                    var headers = HTTPHeaders()
                    headers.add(name: "Location", value: location)
                    headers.add(name: "Cache-Control", value: cacheControl)
                    return Response(status: .found, headers: headers)
                }
                return try serve(image, request, cacheControl: cacheControl)
            }
        }
    }

    /// A thumbnail with its validator and `304`; `Vary: Accept`, since the encoding follows it.
    func serve(_ thumbnail: ImageService.Thumbnail, _ request: Request, cacheControl: String) -> Response {
        var headers = HTTPHeaders()
        headers.add(name: "ETag", value: thumbnail.etag)
        headers.add(name: "Cache-Control", value: cacheControl)
        headers.add(name: "Vary", value: "Accept")
        if let tags = request.headers["If-None-Match"], ETag.matches(tags, thumbnail.etag, weak: true) {
            return Response(status: .notModified, headers: headers)
        }
        headers.add(name: "Content-Type", value: thumbnail.spec.format.mimeType)
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Content-Security-Policy", value: "default-src 'none'; sandbox")
        var response = Response(status: .ok, headers: headers)
        if case .bytes(let bytes) = thumbnail.content { response.body = bytes }
        return response
    }

    /// An image's bytes with its validators, `304`, and single ranges.
    /// `content`: the whole image, already opened (`ImageService.find(_:userID:openingWhole:)`).
    func serve(_ image: StoredImage, _ request: Request, cacheControl: String, content: ImageService.Content? = nil) throws -> Response {
        var headers = HTTPHeaders()
        headers.add(name: "ETag", value: image.etag)
        headers.add(name: "Cache-Control", value: cacheControl)
        headers.add(name: "Last-Modified", value: HTTPDate.format(secondsSinceEpoch: Int(image.createdAtMicroseconds / 1_000_000)).string)
        headers.add(name: "Accept-Ranges", value: "bytes")
        if let tags = request.headers["If-None-Match"], ETag.matches(tags, image.etag, weak: true) {
            return Response(status: .notModified, headers: headers)
        }
        headers.add(name: "Content-Type", value: image.format.mimeType)
        // Stored bytes from users: never sniffed into something else, never a document that runs code.
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Content-Security-Policy", value: "default-src 'none'; sandbox")
        var status = HTTPStatus.ok
        var offset = 0
        var length = image.byteSize
        let rangeHeader = ByteRange.ifRangeAllows(request.headers["If-Range"], etag: image.etag) ? request.headers["Range"] : nil
        switch ByteRange.evaluate(rangeHeader, size: image.byteSize) {
        case .full:
            break
        case .partial(let range):
            status = .partialContent
            offset = range.offset
            length = range.length
            headers.add(name: "Content-Range", value: range.contentRange(size: image.byteSize))
        case .unsatisfiable:
            var response = Problem(
                status: .rangeNotSatisfiable, code: .rangeNotSatisfiable,
                detail: "The image has \(image.byteSize) bytes; the range asked for none of them."
            ).response()
            response.headers.add(name: "Content-Range", value: ByteRange.unsatisfiedContentRange(size: image.byteSize))
            return response
        }
        var response = Response(status: status, headers: headers)
        let opened = status == .ok ? content : nil
        switch try opened ?? images.content(of: image, offset: offset, length: length) {
        case .bytes(let bytes):
            response.body = bytes
        case .chunks(let first, let id, let offset, let length):
            response.file = ImageChunks(images: images, id: id, offset: offset, length: length, first: first)
        case .file(let file, let offset, let length):
            response.file = try FileRegion(file, offset: offset, length: length)
        case .object(let stream):
            response.file = ImageObjectChunks(images: images, stream)
        }
        return response
    }

    @Sendable func delete(_ call: Call) throws -> Response {
        let signedIn = call.signedIn
        try images.delete(try ImagesController.imageID(call), userID: signedIn.user.id)
        return Response(status: .noContent)
    }

    // MARK: - Helpers

    /// The declared format of a multipart file part; a part without a usable type is sniffed.
    private func format(of part: MultipartFormData.FilePart, bytes: UnsafeRawBufferPointer) throws -> ImageFormat {
        if let declared = part.contentType, !declared.lowercased().hasPrefix("application/octet-stream") {
            guard let format = ImageFormat(mimeType: declared) else { throw ImagesController.unsupportedType(declared) }
            return format
        }
        guard let sniffed = ImageFormat.sniff(bytes) else {
            throw ImageError(.contentMismatch, "The file part has no image Content-Type and its bytes are not a supported image.")
        }
        return sniffed
    }

    /// An unknown or malformed id is not found, like another user's.
    static func imageID(_ call: Call) throws -> UUID {
        guard let text = call.parameter("id"), let id = UUID(uuidString: text) else {
            throw ImageError.notFound
        }
        return id
    }

    static func unsupportedType(_ contentType: String) -> Problem {
        Problem(
            status: .unsupportedMediaType, code: .unsupportedMediaType,
            detail: "Send image/jpeg, image/png, image/gif, image/webp or image/heic, or multipart/form-data with one file part.")
    }
}
