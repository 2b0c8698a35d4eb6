import Accounts

/// Entity-tag lists of `If-Match` / `If-None-Match` (RFC 9110 §13.1).
enum ETag {
    /// Whether a header value (`*`, or a comma-separated list of tags) names `etag`: weakly for
    /// `If-None-Match` (a `W/` prefix is ignored), strongly for `If-Match` (a weak tag never matches).
    static func matches(_ header: String, _ etag: String, weak: Bool) -> Bool {
        let trimmed = header.trimmingCharacters(in: " \t\r\n")
        if trimmed == "*" { return true }
        return tags(trimmed).contains { $0.weak ? weak && $0.tag == etag : $0.tag == etag }
    }

    /// The versions an `If-Match` header lets a write change: any without the header or with `*`,
    /// else those its strong tags name.
    static func condition(_ ifMatch: String?) -> WriteCondition {
        guard let trimmed = ifMatch?.trimmingCharacters(in: " \t\r\n"), trimmed != "*" else { return .any }
        return .matching(tags(trimmed).filter { !$0.weak }.map(\.tag))
    }

    private static func tags(_ list: String) -> [(tag: String, weak: Bool)] {
        list.split(separator: ",").map { candidate in
            let tag = String(candidate).trimmingCharacters(in: " \t\r\n")
            return tag.hasPrefix("W/") ? (String(tag.dropFirst(2)), true) : (tag, false)
        }
    }
}
