import HTTP
import Images
import ObjectStorage
import Synchronization

/// The body of a download from the object store, passed on as the store sends it: each chunk is
/// read on the image service's reader threads while the server writes the one before (one chunk
/// ahead, no more; the first while the head goes out), so that the store and the client are both
/// kept busy and a slow reader costs two chunks of memory, not the whole image.
final class ImageObjectChunks: ResponseStream {
    let length: Int
    private let images: ImageService
    private let stream: S3ObjectStream
    private let state: Mutex<State>

    private struct State {
        /// A chunk read ahead (or why it could not be), until the server asks for it.
        var ready: Result<[UInt8], any Error>?
        /// Whether a read is under way.
        var reading = false
        /// The server's request for the next chunk, while the read it waits for is under way.
        var waiting: (@Sendable (Result<[UInt8], any Error>) -> Void)?
        /// Bytes not yet read from the store.
        var unread: Int
    }

    /// Starts reading the first chunk at once, while the answer's head goes out.
    init(images: ImageService, _ stream: S3ObjectStream) {
        self.images = images
        self.stream = stream
        length = stream.length
        state = Mutex(State(unread: stream.length))
        readAhead()
    }

    func next(maxBytes: Int, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        let ready: Result<[UInt8], any Error>? = state.withLock { state in
            guard let ready = state.ready else {
                state.waiting = completion
                return nil
            }
            state.ready = nil
            return ready
        }
        if let ready {
            completion(ready)
            guard case .success = ready else { return }
        }
        readAhead()
    }

    /// Reads the next chunk unless one is read, being read, or none is left; hands it to the
    /// server if it is waiting for it, else keeps it.
    private func readAhead() {
        let count: Int? = state.withLock { state in
            guard !state.reading, state.ready == nil, state.unread > 0 else { return nil }
            state.reading = true
            let count = min(ImageService.chunkSize, state.unread)
            state.unread -= count
            return count
        }
        guard let count else { return }
        images.readChunk(of: stream, maxBytes: count) { [self] result in
            let waiting = state.withLock { state in
                state.reading = false
                defer { state.waiting = nil }
                if state.waiting == nil { state.ready = result }
                return state.waiting
            }
            if let waiting {
                waiting(result)
                if case .success = result { readAhead() }
            }
        }
    }
}
