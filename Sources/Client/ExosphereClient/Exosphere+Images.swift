import Foundation

/// The signed-in user's images: upload, list, download (cached), delete.
extension Exosphere {
    /// Uploads an image from memory.
    ///
    /// - Parameters:
    ///   - contentType: the format of `data`; the server checks the bytes against it
    ///     (`422 content_mismatch`) and refuses other formats (`415`).
    ///   - progress: called as the body goes out, on a thread of the URL session.
    /// - Returns: the image's metadata. Its bytes are put in the image cache, so the first
    ///   `downloadImage(_:)` only revalidates them.
    @discardableResult
    public func uploadImage(
        _ data: Data, contentType: ImageContentType,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> UserImage {
        let request = APIRequest("POST", "/users/me/images", body: .data(data, contentType: contentType.rawValue), progress: progress)
        let image = try await upload(request)
        imageCache?.store(data, etag: UserImage.etag(sha256: image.sha256), forID: image.id)
        return image
    }

    /// Uploads an image from a file, streamed from the disk.
    ///
    /// - Parameter contentType: the file's format; nil to take it from the file's extension.
    @discardableResult
    public func uploadImage(
        contentsOf fileURL: URL, contentType: ImageContentType? = nil,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> UserImage {
        guard let type = contentType ?? ImageContentType(fileExtension: fileURL.pathExtension) else {
            throw ExosphereError(code: .invalidArgument, detail: "No image type for the extension of \(fileURL.lastPathComponent).")
        }
        guard FileManager.default.isReadableFile(atPath: fileURL.path) else {
            throw ExosphereError(code: .invalidArgument, detail: "\(fileURL.path) cannot be read.")
        }
        return try await upload(APIRequest("POST", "/users/me/images", body: .file(fileURL, contentType: type.rawValue), progress: progress))
    }

    private func upload(_ request: APIRequest) async throws -> UserImage {
        let (response, _) = try await sendSignedIn(request)
        return try UserImage(json: try response.json())
    }

    /// The user's images, as an asynchronous sequence that fetches pages of `pageSize` (1–100)
    /// as it goes.
    ///
    /// ```swift
    /// for try await image in exosphere.images(order: .newestFirst) { grid.append(image) }
    /// ```
    public func images(order: ImageOrder = .oldestFirst, pageSize: Int = 50) -> ImageSequence {
        ImageSequence(client: self, order: order, pageSize: pageSize)
    }

    /// One page of the user's images in `order`: the first page without `cursor`, then the page
    /// after each `next` (in the same order), until `next` is nil.
    ///
    /// - Throws: `ExosphereError` `422 invalid_limit` for a `limit` outside 1–100,
    ///   `422 invalid_cursor` for a cursor the server did not issue.
    public func imagePage(order: ImageOrder = .oldestFirst, after cursor: String? = nil, limit: Int = 50) async throws -> ImagePage {
        var query: [(name: String, value: String)] = [("limit", String(limit))]
        if order != .oldestFirst { query.append(("order", order.queryValue)) }
        if let cursor { query.append(("after", cursor)) }
        let (response, _) = try await sendSignedIn(APIRequest("GET", "/users/me/images", query: query))
        let json = try response.json()
        guard let entries = json["images"]?.arrayValue else { throw ExosphereError.invalidResponse("an image list without images") }
        return ImagePage(images: try entries.map(UserImage.init(json:)), next: json["next"]?.stringValue)
    }

    /// The image's bytes, from the disk cache when it has them.
    ///
    /// With `.revalidate` (the default) a cached copy is sent back as `If-None-Match`: the
    /// server answers `304` without the bytes, or `404 image_not_found` when the image was
    /// deleted (the cached copy is dropped too).
    public func downloadImage(_ image: UserImage, cachePolicy: ImageCachePolicy = .revalidate) async throws -> Data {
        try await downloadImage(id: image.id, cachePolicy: cachePolicy)
    }

    /// The image's signed URL (`UserImage.signedPath`) on this server: it needs no token, so
    /// `AsyncImage(url:)` can load it, until it expires; fetch the metadata again for a fresh one.
    /// With `thumbnail`, the URL of that thumbnail instead (WebP or JPEG), for a grid cell: the
    /// server signs each size apart (`UserImage.signedThumbnailPaths`), and a URL serves its own.
    public func signedURL(for image: UserImage, thumbnail: ThumbnailSize? = nil) -> URL? {
        // Appended to the base URL, as every request path is (a base with a path prefix keeps it).
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let path = thumbnail.map { image.signedThumbnailPaths[$0.rawValue] } ?? image.signedPath
        return path.flatMap { URL(string: base + $0) }
    }

    /// A thumbnail of the image that fits within `size` × `size`, orientation applied, through the
    /// disk cache (a thumbnail never changes: a cached one is returned without asking the server).
    ///
    /// - Throws: `ExosphereError` `404 image_not_found`, or `422 undecodable_image` when the
    ///   server cannot decode the file (its `blurhash` is then nil too).
    public func downloadThumbnail(_ image: UserImage, size: ThumbnailSize = .medium) async throws -> Data {
        let key = image.id + "_t" + String(size.rawValue)
        if let cached = imageCache?.entry(forID: key) { return cached.data }
        var request = APIRequest("GET", "/users/me/images/" + APIRequest.segment(image.id) + "/thumbnail?size=\(size.rawValue)")
        // Both decode on every supported system; WebP is the smaller.
        request.headers["Accept"] = "image/webp, image/jpeg;q=0.8"
        let response = try await sendSignedIn(request).0
        guard response.status == 200 else { throw ExosphereError.invalidResponse("a thumbnail answered \(response.status)") }
        if let etag = response.header("ETag") { imageCache?.store(response.body, etag: etag, forID: key) }
        return response.body
    }

    /// The bytes of the image with this id (see `downloadImage(_:cachePolicy:)`).
    public func downloadImage(id: String, cachePolicy: ImageCachePolicy = .revalidate) async throws -> Data {
        let cache = cachePolicy == .ignoreCache ? nil : imageCache
        let cached = cache?.entry(forID: id)
        if let cached, cachePolicy == .returnCacheDataElseLoad { return cached.data }
        var request = APIRequest("GET", "/users/me/images/" + APIRequest.segment(id))
        if let cached { request.headers["If-None-Match"] = cached.etag }
        let response: APIResponse
        do {
            response = try await sendSignedIn(request).0
        } catch let error as ExosphereError where error.status == 404 {
            cache?.remove(id: id)
            throw error
        }
        if response.status == 304, let cached { return cached.data }
        guard response.status == 200 else { throw ExosphereError.invalidResponse("an image download answered \(response.status)") }
        if let etag = response.header("ETag") { cache?.store(response.body, etag: etag, forID: id) }
        return response.body
    }

    /// Deletes the image, and its cached copy.
    ///
    /// - Throws: `ExosphereError` `404 image_not_found` when the user has no such image.
    public func deleteImage(_ image: UserImage) async throws {
        try await deleteImage(id: image.id)
    }

    /// Deletes the image with this id, and its cached copy.
    public func deleteImage(id: String) async throws {
        imageCache?.remove(id: id)
        for size in ThumbnailSize.all { imageCache?.remove(id: id + "_t" + String(size.rawValue)) }
        _ = try await sendSignedIn(APIRequest("DELETE", "/users/me/images/" + APIRequest.segment(id)))
    }

    /// Empties the image cache (it is emptied at sign-out too).
    public func clearImageCache() {
        imageCache?.removeAll()
    }
}

/// One page of `Exosphere.imagePage(order:after:limit:)`.
public struct ImagePage: Sendable, Hashable {
    /// Oldest first.
    public let images: [UserImage]
    /// The cursor of the next page, or nil on the last page. Opaque.
    public let next: String?
}

extension UserImage {
    /// The download's ETag: the API defines it as the quoted SHA-256 of the bytes.
    static func etag(sha256: String) -> String { "\"\(sha256)\"" }
}
