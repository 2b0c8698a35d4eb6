import FoundationEssentials
import HTTP
import Images
import Synchronization
import Zip

/// The body of `GET /users/me/export`: a ZIP archive written as the client takes it. Its layout
/// (`ZipLayout`) is fixed before the first byte; the JSON entry is in memory, each image is read
/// in chunks from its storage (`ImageService.readChunk`, which reads a file-stored image's file
/// too) and its CRC-32 computed as the chunks pass. However large the images, the server holds
/// one chunk of them at a time.
final class ExportArchive: ResponseStream {
    enum Content: Sendable {
        case bytes([UInt8])
        case image(UUID)
    }

    private enum Phase {
        case header, data, descriptor, directory, done
    }

    private struct State {
        var entry = 0
        var phase = Phase.header
        /// Bytes made and not yet handed out, from `pendingOffset` on.
        var pending: [UInt8] = []
        var pendingOffset = 0
        var written = 0
        var crc = CRC32()
        var crcs: [UInt32] = []
    }

    private enum Step {
        case give([UInt8])
        case read(UUID, offset: Int, count: Int)
        case broken(String)
    }

    let length: Int
    private let layout: ZipLayout
    private let contents: [Content]
    private let images: ImageService
    private let state = Mutex(State())

    init(layout: ZipLayout, contents: [Content], images: ImageService) {
        precondition(layout.entries.count == contents.count)
        self.layout = layout
        self.contents = contents
        self.images = images
        length = layout.length
    }

    func next(maxBytes: Int, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {
        let step: Step = state.withLock { state in
            while state.pendingOffset == state.pending.count {
                state.pending = []
                state.pendingOffset = 0
                switch state.phase {
                case .header:
                    guard state.entry < layout.entries.count else {
                        state.phase = .directory
                        continue
                    }
                    state.pending = layout.localHeader(state.entry)
                    state.phase = .data
                    state.written = 0
                    state.crc = CRC32()
                case .data:
                    let size = layout.entries[state.entry].size
                    guard state.written < size else {
                        state.phase = .descriptor
                        continue
                    }
                    let count = min(maxBytes, size - state.written)
                    switch contents[state.entry] {
                    case .bytes(let bytes):
                        let chunk = Array(bytes[state.written..<state.written + count])
                        state.crc.update(chunk)
                        state.written += count
                        return .give(chunk)
                    case .image(let id):
                        return .read(id, offset: state.written, count: count)
                    }
                case .descriptor:
                    let crc = state.crc.value
                    state.crcs.append(crc)
                    state.pending = layout.descriptor(state.entry, crc: crc)
                    state.entry += 1
                    state.phase = .header
                case .directory:
                    state.pending = layout.centralDirectory(crcs: state.crcs)
                    state.phase = .done
                case .done:
                    return .broken("asked for more than the archive's \(layout.length) bytes")
                }
            }
            let count = min(maxBytes, state.pending.count - state.pendingOffset)
            defer { state.pendingOffset += count }
            return .give(Array(state.pending[state.pendingOffset..<state.pendingOffset + count]))
        }
        switch step {
        case .give(let bytes):
            completion(.success(bytes))
        case .broken(let reason):
            completion(.failure(ExportBroken(reason: reason)))
        case .read(let id, let offset, let count):
            images.readChunk(of: id, offset: offset, length: count) { [self] result in
                if case .success(let bytes) = result {
                    state.withLock { state in
                        state.crc.update(bytes)
                        state.written += bytes.count
                    }
                }
                completion(result)
            }
        }
    }
}

/// An archive that cannot go on (a bug: the server asked past its end).
struct ExportBroken: Error, CustomStringConvertible {
    let reason: String
    var description: String { "export broken: \(reason)" }
}
