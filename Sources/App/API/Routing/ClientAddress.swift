import Glibc

/// The address of the client behind a request, seen through the reverse proxies the deployment trusts.
///
/// Behind a proxy every TCP peer is the proxy, so a per-address limit would lump all clients
/// together. A trusted proxy says whom it spoke to in `X-Forwarded-For`; each hop appends the
/// address it saw, so reading from the right, every address up to the first untrusted one was
/// written by a proxy of ours, and everything to its left came from the client and may be forged.
public enum ClientAddress {
    /// The client address for the sign-in throttle.
    ///
    /// - Parameters:
    ///   - peer: the TCP peer's address as the socket reports it.
    ///   - forwardedFor: every `X-Forwarded-For` field value, in order (several fields form one list,
    ///     RFC 9110 §5.3; haproxy's `option forwardfor` adds a field of its own rather than appending).
    ///   - trusted: canonical addresses of trusted proxies (see `canonical`).
    /// - Returns: `peer` unless it is a trusted proxy; then the right-most forwarded address that is
    ///   not itself a trusted proxy, in canonical form, or `peer` when that hop is not an IP literal
    ///   or there is none.
    static func resolve(peer: String, forwardedFor: [String], trusted: Set<String>) -> String {
        guard !trusted.isEmpty, let peerAddress = canonical(peer), trusted.contains(peerAddress) else { return peer }
        var hops: [Substring] = []
        for field in forwardedFor {
            for element in field.split(separator: ",") {
                let hop = trimmed(element)
                if !hop.isEmpty { hops.append(hop) }
            }
        }
        for hop in hops.reversed() {
            // Not an address where a proxy of ours would have written one: nothing left of it can be believed.
            guard let address = canonical(hop) else { return peer }
            if !trusted.contains(address) { return address }
        }
        return peer
    }

    /// The canonical text of an IPv4 or IPv6 literal (`inet_ntop`'s form, lower case, `::`
    /// compressed; an IPv4-mapped IPv6 address as plain IPv4), or nil for anything else: host
    /// names, ports, brackets, zone ids. Canonical, so that one client cannot spell its address
    /// in several ways to get several throttle counters.
    public static func canonical(_ text: some StringProtocol) -> String? {
        // Also keeps out NUL, which would end the C string early.
        guard !text.isEmpty, text.utf8.count < Int(INET6_ADDRSTRLEN),
            text.utf8.allSatisfy({ isHexDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: ":") })
        else { return nil }
        let string = String(text)
        var v4 = in_addr()
        if inet_pton(AF_INET, string, &v4) == 1 { return format(AF_INET, withUnsafeBytes(of: &v4) { Array($0) }) }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, string, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return format(AF_INET, Array(bytes[12...]))
        }
        return format(AF_INET6, bytes)
    }

    /// The group a throttle counts `address` in: an IPv6 address by its /64 prefix (`2001:db8:1:2::/64`),
    /// since one host or one customer line commonly holds a whole /64; anything else as it is.
    static func throttleGroup(_ address: String) -> String {
        guard address.contains(":"), let canonical = canonical(address) else { return address }
        guard canonical.contains(":") else { return canonical }  // IPv4-mapped
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, canonical, &v6) == 1 else { return address }
        var bytes = withUnsafeBytes(of: &v6) { Array($0) }
        for index in 8..<16 { bytes[index] = 0 }
        return (format(AF_INET6, bytes) ?? canonical) + "/64"
    }

    /// `inet_ntop` of an address in network byte order (4 bytes for IPv4, 16 for IPv6).
    private static func format(_ family: Int32, _ address: [UInt8]) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let written = address.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count)) != nil }
        guard written else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x66)
    }

    /// Without the optional whitespace (spaces and tabs) around a list element.
    public static func trimmed(_ text: Substring) -> Substring {
        var slice = text
        while let first = slice.first, first == " " || first == "\t" { slice.removeFirst() }
        while let last = slice.last, last == " " || last == "\t" { slice.removeLast() }
        return slice
    }
}
