/// Rules for client-supplied request ids.
enum RequestID {
    /// Up to 128 characters of letters, digits and `-_.:`; anything else is replaced by our own id.
    static func isAcceptable(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= 128
            && id.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || "-_.:".utf8.contains($0)
            }
    }
}

extension EventLoop {
    func nextRequestID(from header: String?) -> String {
        if let header, RequestID.isAcceptable(header) { return header }
        requestCounter &+= 1
        // prefix + counter in hex, built in place: this runs for every request.
        let digits = (64 - requestCounter.leadingZeroBitCount + 3) / 4
        return String(unsafeUninitializedCapacity: requestIDPrefix.count + digits) { buffer in
            _ = buffer.initialize(fromContentsOf: requestIDPrefix)
            var rest = requestCounter
            for i in stride(from: requestIDPrefix.count + digits - 1, through: requestIDPrefix.count, by: -1) {
                let nibble = UInt8(rest & 0xF)
                buffer[i] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
                rest >>= 4
            }
            return requestIDPrefix.count + digits
        }
    }
}
