import FoundationEssentials
import HTTP
import Images
import Synchronization

/// The body of a download from the database storage: its first chunk, read by the handler, then
/// the rest read chunk by chunk on the image service's reader threads as the client takes them,
/// so that a slow reader costs one chunk of memory, not the whole image.
final class ImageChunks: ResponseStream {
    let length: Int
    private let images: ImageService
    private let id: UUID
    /// The first chunk until it is handed out, and where the next read starts.
    private let state: Mutex<(first: [UInt8]?, nextOffset: Int, remaining: Int)>

    init(images: ImageService, id: UUID, offset: Int, length: Int, first: [UInt8]) {
        self.images = images
        self.id = id
        self.length = length
        state = Mutex((first, offset + first.count, length - first.count))
    }

    func next(maxBytes: Int, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        enum Step {
            case first([UInt8])
            case read(offset: Int, count: Int)
        }
        let step: Step = state.withLock { state in
            if let first = state.first {
                state.first = nil
                return .first(first)
            }
            let count = min(maxBytes, state.remaining)
            defer {
                state.nextOffset += count
                state.remaining -= count
            }
            return .read(offset: state.nextOffset, count: count)
        }
        switch step {
        case .first(let bytes): completion(.success(bytes))
        case .read(let offset, let count): images.readChunk(of: id, offset: offset, length: count, completion)
        }
    }
}
