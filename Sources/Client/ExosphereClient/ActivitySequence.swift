/// The signed-in user's security events as an `AsyncSequence` (`Exosphere.activity(pageSize:)`),
/// newest first, fetched one page at a time through the server's cursors: each page is fetched
/// when the sequence reaches it, so a list that shows the last few events stops early.
public struct ActivitySequence: AsyncSequence, Sendable {
    /// Each event.
    public typealias Element = ActivityEvent

    let client: Exosphere
    let pageSize: Int

    /// A new iteration from the newest event: nothing is fetched before its first `next()`.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(client: client, pageSize: pageSize)
    }

    /// Iterates over the events, fetching pages as needed; throws `ExosphereError`.
    public struct AsyncIterator: AsyncIteratorProtocol, Sendable {
        private let client: Exosphere
        private let pageSize: Int
        private var buffer: [ActivityEvent] = []
        private var position = 0
        private var cursor: String?
        private var exhausted = false

        init(client: Exosphere, pageSize: Int) {
            self.client = client
            self.pageSize = pageSize
        }

        /// The next (older) event, fetching the next page when needed; nil after the last.
        public mutating func next() async throws -> ActivityEvent? {
            while position == buffer.count {
                if exhausted { return nil }
                let page = try await client.activityPage(after: cursor, limit: pageSize)
                buffer = page.events
                position = 0
                cursor = page.next
                exhausted = page.next == nil
            }
            defer { position += 1 }
            return buffer[position]
        }
    }
}
