import FoundationEssentials
import Synchronization
import Threads
import Thumbnails

/// Thumbnails recently served, in memory, up to a byte budget: a grid asks for the same cells
/// again and again, and a thumbnail's bytes never change. Each entry remembers when its image
/// was last seen in the database, which is how a signed URL knows the image still exists.
final class ThumbnailCache: Sendable {
    struct Key: Hashable {
        let id: UUID
        let spec: ThumbnailSpec
    }

    struct Entry {
        let thumbnail: ImageService.Thumbnail
        /// Monotonic nanoseconds.
        var seenAt: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var bytes = 0
    }

    let capacityBytes: Int
    private let state = Mutex(State())

    init(capacityBytes: Int) { self.capacityBytes = capacityBytes }

    /// The entry if its image was seen within `maxAgeNanoseconds` (any age when nil).
    func get(_ id: UUID, _ spec: ThumbnailSpec, maxAgeNanoseconds: UInt64? = nil) -> ImageService.Thumbnail? {
        guard let entry = state.withLock({ $0.entries[Key(id: id, spec: spec)] }) else { return nil }
        if let maxAgeNanoseconds, monotonicNanoseconds() &- entry.seenAt > maxAgeNanoseconds { return nil }
        return entry.thumbnail
    }

    func put(_ thumbnail: ImageService.Thumbnail, of id: UUID) {
        guard case .bytes(let bytes) = thumbnail.content, bytes.count * 8 <= capacityBytes else { return }
        let key = Key(id: id, spec: thumbnail.spec)
        let now = monotonicNanoseconds()
        state.withLock { state in
            if let old = state.entries.updateValue(Entry(thumbnail: thumbnail, seenAt: now), forKey: key),
                case .bytes(let oldBytes) = old.thumbnail.content
            {
                state.bytes -= oldBytes.count
            }
            state.bytes += bytes.count
            // Over budget: drop entries until a quarter is free (the dictionary's order is as good as any).
            if state.bytes > capacityBytes {
                for (key, entry) in state.entries where state.bytes > capacityBytes * 3 / 4 {
                    if case .bytes(let dropped) = entry.thumbnail.content { state.bytes -= dropped.count }
                    state.entries[key] = nil
                }
            }
        }
    }

    /// Forgets an image's thumbnails (it was deleted here).
    func remove(_ id: UUID) {
        state.withLock { state in
            for spec in ImageDirectory.allSpecs() {
                if let entry = state.entries.removeValue(forKey: Key(id: id, spec: spec)), case .bytes(let bytes) = entry.thumbnail.content {
                    state.bytes -= bytes.count
                }
            }
        }
    }
}
