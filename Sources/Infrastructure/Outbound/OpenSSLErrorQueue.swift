import COpenSSL

/// This thread's OpenSSL error queue, read once per failure.
enum OpenSSLErrorQueue {
    /// The reason OpenSSL recorded first, with the queue emptied so that a stale entry cannot be
    /// blamed on a later, unrelated failure on the same thread (libpq uses the queue too).
    static func drain() -> String {
        var reason = "unknown reason"
        let first = ERR_get_error()
        if first != 0 {
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(first, &buffer, buffer.count)
            reason = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        ERR_clear_error()
        return reason
    }
}
