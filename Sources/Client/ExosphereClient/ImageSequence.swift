/// The user's images as an `AsyncSequence` (`Exosphere.images(order:pageSize:)`), fetched one
/// page at a time through the server's cursors.
///
/// Either way (`ImageOrder`), each page is fetched when the sequence reaches it, so a grid shows
/// its first cells after one request and can stop early.
public struct ImageSequence: AsyncSequence, Sendable {
    /// Each image's metadata; download the bytes with `Exosphere.downloadImage(_:)`.
    public typealias Element = UserImage

    let client: Exosphere
    let order: ImageOrder
    let pageSize: Int

    /// A new iteration from the first image: nothing is fetched before its first `next()`.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(client: client, order: order, pageSize: pageSize)
    }

    /// Iterates over the images, fetching pages as needed; throws `ExosphereError`.
    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        private let client: Exosphere
        private let order: ImageOrder
        private let pageSize: Int
        private var buffer: [UserImage] = []
        private var position = 0
        private var cursor: String?
        private var exhausted = false

        init(client: Exosphere, order: ImageOrder, pageSize: Int) {
            self.client = client
            self.order = order
            self.pageSize = pageSize
        }

        /// The next image, fetching the next page when needed; nil after the last.
        public mutating func next() async throws -> UserImage? {
            while position == buffer.count {
                if exhausted { return nil }
                let page = try await client.imagePage(order: order, after: cursor, limit: pageSize)
                buffer = page.images
                cursor = page.next
                exhausted = page.next == nil
                position = 0
            }
            defer { position += 1 }
            return buffer[position]
        }
    }
}
