import ExosphereClient
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import TestSupport
import Testing

/// Images: upload, the list in both orders, downloads through the disk cache, deletion.
@Suite(.testThreads, .liveServer("images"), .serialized)  // tests count the server's answers in its metrics
struct ImagesTests {
    let server: LiveServer

    init() throws { server = try liveServer() }

    /// A PNG of its own size, so every photo has other bytes.
    static func photo(_ number: Int) -> Data { Data(Build.png(width: UInt32(10 + number), height: UInt32(20 + number))) }

    /// The image grid: upload several, list them oldest and newest first, download them with a
    /// warm cache that revalidates.
    @Test func theImageGrid() async throws {
        let cache = try temporaryDirectory("grid-cache")
        let (client, _, _) = try await server.signedInClient { $0.imageCacheDirectory = cache }
        var uploaded: [UserImage] = []
        for number in 0..<5 {
            uploaded.append(try await client.uploadImage(ImagesTests.photo(number), contentType: .png))
        }
        #expect(uploaded.map(\.width) == [10, 11, 12, 13, 14])
        #expect(uploaded.allSatisfy { $0.contentType == .png && $0.path == "/users/me/images/\($0.id)" })

        // Pages of two: three requests each way.
        let listed = try await server.requests("GET", "/users/me/images", 200)
        var oldestFirst: [UserImage] = []
        for try await image in client.images(order: .oldestFirst, pageSize: 2) { oldestFirst.append(image) }
        #expect(oldestFirst == uploaded)
        var newestFirst: [UserImage] = []
        for try await image in client.images(order: .newestFirst, pageSize: 2) { newestFirst.append(image) }
        #expect(newestFirst == uploaded.reversed())
        #expect(try await server.requests("GET", "/users/me/images", 200) == listed + 6)

        // The grid's cells: the cache was filled at upload, so every download is a 304.
        let revalidated = try await server.requests("GET", "/users/me/images/{id}", 304)
        let downloaded = try await server.requests("GET", "/users/me/images/{id}", 200)
        for (number, image) in newestFirst.reversed().enumerated() {
            #expect(try await client.downloadImage(image) == ImagesTests.photo(number))
        }
        #expect(try await server.requests("GET", "/users/me/images/{id}", 304) == revalidated + 5)
        #expect(try await server.requests("GET", "/users/me/images/{id}", 200) == downloaded)
    }

    /// A signed URL loads with a plain `URLSession`, as `AsyncImage` would: no token.
    @Test func aSignedURLNeedsNoToken() async throws {
        let (client, _, _) = try await server.signedInClient()
        let image = try await client.uploadImage(ImagesTests.photo(7), contentType: .png)
        let url = try #require(client.signedURL(for: image))
        #expect(url.path == "/images/\(image.id)")
        let (data, response) = try await URLSession(configuration: .ephemeral).data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(data == ImagesTests.photo(7))
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Cache-Control")?.hasPrefix("public, max-age=") == true)
    }

    /// Thumbnails and placeholders: the grid's way to show images without their originals.
    @Test func thumbnailsAndPlaceholdersForAGrid() async throws {
        let (client, _, _) = try await server.signedInClient()
        let jpeg = try TestImages.encode(TestImages.marked(width: 900, height: 600), as: ".jpg[Q=85]")
        let uploaded = try await client.uploadImage(Data(jpeg), contentType: .jpeg)
        let thumbnail = try await client.downloadThumbnail(uploaded, size: .small)
        #expect(thumbnail.starts(with: Array("RIFF".utf8)))
        let pixels = try TestImages.decode(Array(thumbnail))
        #expect(pixels.width == 128 && pixels.height == 85)
        // The disk cache answers the second time: the server counts one thumbnail request.
        let before = try await server.requests("GET", "/users/me/images/{id}/thumbnail", 200)
        #expect(try await client.downloadThumbnail(uploaded, size: .small) == thumbnail)
        #expect(try await server.requests("GET", "/users/me/images/{id}/thumbnail", 200) == before)
        // The placeholders arrive with the metadata once the server has decoded the image.
        var listed: UserImage?
        for _ in 0..<100 {
            listed = try await client.imagePage().images.first { $0.id == uploaded.id }
            if listed?.blurhash != nil { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(listed?.blurhash?.count == 28)
        #expect(listed?.dominantColor?.hasPrefix("#") == true)
        // A signed thumbnail URL loads without a token.
        let image = try #require(listed)
        let url = try #require(client.signedURL(for: image, thumbnail: .medium))
        let (data, response) = try await URLSession(configuration: .ephemeral).data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(try TestImages.decode(Array(data)).width == 256)
    }

    @Test func aColdCacheDownloadsOnceThenRevalidates() async throws {
        let (uploader, email, password) = try await server.signedInClient()
        let image = try await uploader.uploadImage(ImagesTests.photo(40), contentType: .png)
        let cache = try temporaryDirectory("cold-cache")
        let viewer = try server.client { $0.imageCacheDirectory = cache }
        try await viewer.signIn(email: email, password: password)

        let full = try await server.requests("GET", "/users/me/images/{id}", 200)
        let notModified = try await server.requests("GET", "/users/me/images/{id}", 304)
        #expect(try await viewer.downloadImage(image) == ImagesTests.photo(40))
        #expect(try await server.requests("GET", "/users/me/images/{id}", 200) == full + 1)
        #expect(try await viewer.downloadImage(image) == ImagesTests.photo(40))
        #expect(try await server.requests("GET", "/users/me/images/{id}", 304) == notModified + 1)
        #expect(FileManager.default.fileExists(atPath: cache.appendingPathComponent(image.id).path))

        // Without asking the server at all, and without the cache at all.
        #expect(try await viewer.downloadImage(image, cachePolicy: .returnCacheDataElseLoad) == ImagesTests.photo(40))
        #expect(try await server.requests("GET", "/users/me/images/{id}", 304) == notModified + 1)
        #expect(try await viewer.downloadImage(id: image.id, cachePolicy: .ignoreCache) == ImagesTests.photo(40))
        #expect(try await server.requests("GET", "/users/me/images/{id}", 200) == full + 2)

        // A new client on the same cache directory (the app restarted) starts warm.
        let restarted = try server.client(imageCache: cache)
        try await restarted.signIn(email: email, password: password)
        #expect(try await restarted.downloadImage(image) == ImagesTests.photo(40))
        #expect(try await server.requests("GET", "/users/me/images/{id}", 304) == notModified + 2)
    }

    @Test func revalidatingADeletedImageDropsItFromTheCache() async throws {
        let (client, email, password) = try await server.signedInClient()
        let image = try await client.uploadImage(ImagesTests.photo(50), contentType: .png)
        let cache = try temporaryDirectory("deleted-cache")
        let other = try server.client { $0.imageCacheDirectory = cache }
        try await other.signIn(email: email, password: password)
        _ = try await other.downloadImage(image)

        try await client.deleteImage(image)
        let error = await exosphereError { _ = try await other.downloadImage(image) }
        #expect(error?.status == 404)
        #expect(error?.code == .imageNotFound)
        #expect(!FileManager.default.fileExists(atPath: cache.appendingPathComponent(image.id).path))
        let again = await exosphereError { try await client.deleteImage(id: image.id) }
        #expect(again?.code == .imageNotFound)
        #expect(try await client.imagePage().images.isEmpty)
    }

    @Test func uploadFromAFileWithProgress() async throws {
        let (client, _, _) = try await server.signedInClient()
        let directory = try temporaryDirectory("upload")
        // A JPEG made bigger with a comment segment, so that the body goes out in several pieces.
        let comment = Build.segment(0xFE, [UInt8](repeating: 0x41, count: 60_000))
        let bytes = Data(Build.jpeg([Build.app0JFIF, comment, comment, comment, Build.sof(width: 640, height: 480), Build.sos]))
        let file = directory.appendingPathComponent("holiday.JPG")
        try bytes.write(to: file)

        let reports = Mutex<[UploadProgress]>([])
        let image = try await client.uploadImage(contentsOf: file) { progress in reports.withLock { $0.append(progress) } }
        #expect(image.contentType == .jpeg)
        #expect(image.byteSize == bytes.count)
        #expect(image.width == 640 && image.height == 480)
        let seen = reports.withLock { $0 }
        #expect(!seen.isEmpty)
        #expect(seen.last?.sentBytes == Int64(bytes.count))
        #expect(seen.last?.fractionCompleted == 1)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.sentBytes <= $1.sentBytes })
        #expect(try await client.downloadImage(image) == bytes)

        let fromData = Mutex<[UploadProgress]>([])
        let second = try await client.uploadImage(bytes, contentType: .jpeg) { progress in fromData.withLock { $0.append(progress) } }
        #expect(second.sha256 == image.sha256)
        #expect(fromData.withLock { $0.last?.totalBytes } == Int64(bytes.count))

        let unknown = await exosphereError { try await client.uploadImage(contentsOf: directory.appendingPathComponent("notes.txt")) }
        #expect(unknown?.code == .invalidArgument)
        let missing = await exosphereError { try await client.uploadImage(contentsOf: directory.appendingPathComponent("missing.png")) }
        #expect(missing?.code == .invalidArgument)
    }

    @Test func bytesThatAreNotTheDeclaredFormatAreRefused() async throws {
        let (client, _, _) = try await server.signedInClient()
        let error = await exosphereError { try await client.uploadImage(ImagesTests.photo(1), contentType: .jpeg) }
        #expect(error?.status == 422)
        #expect(error?.code == .contentMismatch)
        let unsupported = await exosphereError {
            try await client.uploadImage(ImagesTests.photo(1), contentType: ImageContentType(rawValue: "image/bmp"))
        }
        #expect(unsupported?.status == 415)
        #expect(unsupported?.code == "unsupported_media_type")
    }

    @Test func pagesFollowTheServersCursors() async throws {
        let (client, _, _) = try await server.signedInClient()
        let images = try await (0..<3).asyncMap { try await client.uploadImage(ImagesTests.photo(60 + $0), contentType: .png) }
        let first = try await client.imagePage(limit: 2)
        #expect(first.images == Array(images.prefix(2)))
        let next = try #require(first.next)
        let second = try await client.imagePage(after: next, limit: 2)
        #expect(second.images == [images[2]])
        #expect(second.next == nil)
        let badLimit = await exosphereError { _ = try await client.imagePage(limit: 101) }
        #expect(badLimit?.code == "invalid_limit")
        let badCursor = await exosphereError { _ = try await client.imagePage(after: "not a cursor") }
        #expect(badCursor?.code == "invalid_cursor")
        // An error while iterating is thrown by the loop.
        let error = await exosphereError { for try await _ in client.images(pageSize: 0) {} }
        #expect(error?.code == "invalid_limit")
    }

    /// Newest first is paged by the server: the sequence's first image comes after one request,
    /// and the pages follow in order, each fetched as the sequence reaches it.
    @Test func newestFirstStreamsPageByPage() async throws {
        let (client, _, _) = try await server.signedInClient()
        let images = try await (0..<5).asyncMap { try await client.uploadImage(ImagesTests.photo(80 + $0), contentType: .png) }
        let before = try await server.requests("GET", "/users/me/images", 200)
        var iterator = client.images(order: .newestFirst, pageSize: 2).makeAsyncIterator()
        #expect(try await iterator.next() == images[4])
        #expect(try await server.requests("GET", "/users/me/images", 200) == before + 1, "the first image took one page")
        var rest: [UserImage] = []
        while let image = try await iterator.next() { rest.append(image) }
        #expect(rest == Array(images[0..<4].reversed()))
        #expect(try await server.requests("GET", "/users/me/images", 200) == before + 3)
        let first = try await client.imagePage(order: .newestFirst, limit: 3)
        #expect(first.images == [images[4], images[3], images[2]])
        let second = try await client.imagePage(order: .newestFirst, after: try #require(first.next), limit: 3)
        #expect(second.images == [images[1], images[0]] && second.next == nil)
    }

    @Test func signingOutEmptiesTheImageCache() async throws {
        let cache = try temporaryDirectory("signout-cache")
        let (client, _, _) = try await server.signedInClient { $0.imageCacheDirectory = cache }
        let image = try await client.uploadImage(ImagesTests.photo(70), contentType: .png)
        #expect(FileManager.default.fileExists(atPath: cache.appendingPathComponent(image.id).path))
        try await client.signOut()
        #expect(!FileManager.default.fileExists(atPath: cache.appendingPathComponent(image.id).path))
    }

    @Test func theCacheKeepsWithinItsSizeDroppingTheLeastRecentlyUsed() async throws {
        let cache = try temporaryDirectory("small-cache")
        let photos = (0..<3).map { Data(Build.png(width: 5, height: 5) + [UInt8](repeating: UInt8($0), count: 400)) }
        let (client, _, _) = try await server.signedInClient {
            $0.imageCacheDirectory = cache
            $0.imageCacheMaxBytes = 2 * photos[0].count + 100
        }
        let first = try await client.uploadImage(photos[0], contentType: .png)
        let second = try await client.uploadImage(photos[1], contentType: .png)
        // The cache orders its images by their files' modification times, stamped from a clock
        // that moves in steps of milliseconds: `first` is used, and `third` written, only once a
        // file written now is stamped later than `second` was.
        try waitForTheFileClock(toPass: cache.appendingPathComponent(second.id), probing: try temporaryDirectory("clock-probe"))
        _ = try await client.downloadImage(first, cachePolicy: .returnCacheDataElseLoad)  // used: second is now the oldest
        #expect(
            try modificationTime(cache.appendingPathComponent(first.id)) > modificationTime(cache.appendingPathComponent(second.id)),
            "reading the cached first image marks it as used after the second")
        let third = try await client.uploadImage(photos[2], contentType: .png)
        let kept = Set(try FileManager.default.contentsOfDirectory(atPath: cache.path).filter { !$0.hasSuffix(".etag") })
        #expect(kept == [first.id, third.id])

        client.clearImageCache()
        #expect(!FileManager.default.fileExists(atPath: cache.appendingPathComponent(first.id).path))
        #expect(try await client.downloadImage(second) == photos[1])
    }
}

/// A file's modification time.
private func modificationTime(_ file: URL) throws -> Date {
    try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.modificationDate] as? Date, "no modification time for \(file.path)")
}

/// Waits (30 s at most) until a file written now is stamped later than `file` was, writing one
/// in `directory` to see.
private func waitForTheFileClock(toPass file: URL, probing directory: URL) throws {
    let stamp = try modificationTime(file)
    let probe = directory.appendingPathComponent("probe")
    try waitUntil(timeout: .seconds(30), pollingEvery: .milliseconds(1), "files to be stamped later than \(file.lastPathComponent)") {
        try Data([1]).write(to: probe, options: .atomic)
        return try modificationTime(probe) > stamp
    }
}

extension Sequence where Element: Sendable {
    /// `map` with an asynchronous transform, in order.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}
