import HTTP
import Images
import ObjectStorage
import Synchronization

/// The body of a download from the object store: its first chunk, read by the handler, then the
/// rest as the store sends it, read on the image service's reader threads as the client takes it,
/// so that a slow reader costs one chunk of memory, not the whole image.
final class ImageObjectChunks: ResponseStream {
    let length: Int
    private let images: ImageService
    private let stream: S3ObjectStream
    /// The first chunk until it is handed out.
    private let first: Mutex<[UInt8]?>

    init(images: ImageService, first: [UInt8], _ stream: S3ObjectStream) {
        self.images = images
        self.stream = stream
        self.first = Mutex(first)
        length = stream.length
    }

    func next(maxBytes: Int, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        if let first = first.withLock({ first in
            defer { first = nil }; return first
        }) {
            completion(.success(first))
        } else {
            images.readChunk(of: stream, maxBytes: maxBytes, completion)
        }
    }
}
