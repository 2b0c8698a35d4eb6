import HTTP
import Images
import Thumbnails

/// Which encoding a thumbnail is sent in: WebP when the `Accept` header allows it, else JPEG.
enum ThumbnailNegotiation {
    /// The thumbnail a request asks for: `size` (256 when absent; `422 invalid_size` when not a
    /// size) in the encoding its `Accept` allows.
    static func spec(size: String?, _ request: Request) throws -> ThumbnailSpec {
        ThumbnailSpec(size: try ImageService.thumbnailSize(size), format: format(accept: request.headers["Accept"]))
    }

    /// The most specific media range that names WebP decides (`image/webp`, then `image/*`, then
    /// `*/*`); WebP unless its quality is 0. No header at all accepts anything (RFC 9110 §12.5.1).
    static func format(accept: String?) -> ThumbnailFormat {
        guard let accept else { return .webp }
        var best: (specificity: Int, quality: Double)?
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";")
            guard let type = parts.first.map({ String($0).trimmingCharacters(in: " \t").lowercased() }) else { continue }
            let specificity: Int
            switch type {
            case "image/webp": specificity = 3
            case "image/*": specificity = 2
            case "*/*": specificity = 1
            default: continue
            }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { String($0).trimmingCharacters(in: " \t") }
                if pair.count == 2, pair[0].lowercased() == "q", let value = Double(pair[1]) { quality = value }
            }
            if best.map({ specificity > $0.specificity }) ?? true { best = (specificity, quality) }
        }
        return (best?.quality ?? 0) > 0 ? .webp : .jpeg
    }
}
