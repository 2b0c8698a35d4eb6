import HTTP
import Images
import ObjectStorage

/// The body of a download from the object store, passed on as the store sends it, a chunk at a
/// time as the server asks: what the store sent already is read at once on the server's own
/// thread (no thread hop per chunk: the socket's buffer is the read-ahead); only when nothing has
/// come does a reader thread of the image service wait for it. A slow client costs a chunk of
/// memory, not the whole image, and the kernel's buffers meanwhile.
final class ImageObjectChunks: ResponseStream {
    let length: Int
    private let images: ImageService
    private let stream: S3ObjectStream

    init(images: ImageService, _ stream: S3ObjectStream) {
        self.images = images
        self.stream = stream
        length = stream.length
    }

    func next(maxBytes: Int, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        do {
            if let chunk = try images.readChunkIfReady(of: stream, maxBytes: maxBytes) { return completion(.success(chunk)) }
        } catch {
            return completion(.failure(error))
        }
        images.readChunk(of: stream, maxBytes: maxBytes, completion)
    }

    func recycle(_ chunk: [UInt8]) {
        images.recycle(chunk)
    }
}
