import Glibc

/// Where and how to reach the relay: parsed from `--smtp-url`.
///
/// `smtps://user:pass@host[:465]` (TLS from the first byte), `smtp://user:pass@host[:587]`
/// (STARTTLS, required) or `smtp+plain://host[:25]` (no encryption: credentials only to a
/// loopback host). User and password are percent-decoded.
public struct SMTPConfiguration: Sendable, CustomStringConvertible {
    /// How the connection is protected.
    public enum Security: String, Sendable {
        /// `smtps://`, port 465 by default: TLS from the first byte (RFC 8314).
        case implicitTLS
        /// `smtp://`, port 587 by default: STARTTLS, and no message is sent if the server does not offer it.
        case startTLS
        /// `smtp+plain://`, port 25 by default: no encryption at all.
        case none
    }

    public var security: Security
    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?
    /// A PEM bundle to trust instead of the system's store (tests, private CAs).
    public var caFile: String?
    /// The limit on each connect, read and write (a whole reply is one read).
    public var timeout: Duration = .seconds(30)
    /// The name we give in EHLO.
    public var heloName = "localhost"

    public init(url: String) throws(SMTPError) {
        guard let separator = url.firstRange(of: "://") else {
            throw SMTPError(.invalidURL, "the SMTP URL has no scheme (expected smtps://, smtp:// or smtp+plain://)")
        }
        let scheme = url[..<separator.lowerBound].lowercased()
        switch scheme {
        case "smtps": (security, port) = (.implicitTLS, 465)
        case "smtp": (security, port) = (.startTLS, 587)
        case "smtp+plain": (security, port) = (.none, 25)
        default: throw SMTPError(.invalidURL, "unsupported SMTP URL scheme '\(scheme)' (expected smtps://, smtp:// or smtp+plain://)")
        }
        var rest = url[separator.upperBound...]
        guard !rest.contains("?"), !rest.contains("#") else {
            throw SMTPError(.invalidURL, "the SMTP URL may not have a query or a fragment (percent-encode '?' and '#' in the password)")
        }
        if let slash = rest.firstIndex(of: "/") {
            guard rest[slash...] == "/" else { throw SMTPError(.invalidURL, "the SMTP URL may not have a path (percent-encode '/' in the password)") }
            rest = rest[..<slash]
        }
        if let at = rest.lastIndex(of: "@") {
            let userinfo = rest[..<at]
            rest = rest[rest.index(after: at)...]
            let colon = userinfo.firstIndex(of: ":")
            guard let user = Self.percentDecoded(userinfo[..<(colon ?? userinfo.endIndex)]), !user.isEmpty else {
                throw SMTPError(.invalidURL, "the SMTP URL's user name is empty or badly percent-encoded")
            }
            username = user
            if let colon {
                guard let secret = Self.percentDecoded(userinfo[userinfo.index(after: colon)...]) else {
                    throw SMTPError(.invalidURL, "the SMTP URL's password is badly percent-encoded")
                }
                password = secret
            }
        }
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw SMTPError(.invalidURL, "the SMTP URL's IPv6 address has no closing ']'") }
            host = String(rest[rest.index(after: rest.startIndex)..<close])
            var address = in6_addr()
            guard inet_pton(AF_INET6, host, &address) == 1 else { throw SMTPError(.invalidURL, "'\(host)' is not an IPv6 address") }
            let after = rest[rest.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { throw SMTPError(.invalidURL, "unexpected text after the SMTP URL's IPv6 address") }
            portText = after.isEmpty ? nil : after.dropFirst()
        } else {
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2 else { throw SMTPError(.invalidURL, "an IPv6 address in the SMTP URL must be in brackets") }
            host = String(parts[0])
            portText = parts.count == 2 ? parts[1] : nil
            let allowed = host.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "-._".unicodeScalars.contains($0)
            }
            guard !host.isEmpty, allowed else { throw SMTPError(.invalidURL, "the SMTP URL's host '\(host)' is not a host name or address") }
        }
        if let portText {
            // Not quoted back: in a URL missing its "@host", this would be the password.
            guard portText.allSatisfy({ ("0"..."9").contains($0) }), let number = Int(portText), (1...65_535).contains(number) else {
                throw SMTPError(.invalidURL, "the SMTP URL's port is not a number from 1 to 65535")
            }
            port = number
        }
        if security == .none, username != nil, !isLoopback {
            throw SMTPError(.invalidURL, "smtp+plain:// would send the password unencrypted to \(host): use smtps:// or smtp://, or a loopback relay")
        }
    }

    /// Whether `host` is this machine: 127.0.0.0/8, ::1 or "localhost", where credentials may go unencrypted.
    public var isLoopback: Bool {
        if host.lowercased() == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
        return withUnsafeBytes(of: &v6) { $0.elementsEqual([UInt8](repeating: 0, count: 15) + [1]) }
    }

    /// The URL without the password, e.g. "smtps://user@host:465", for logs.
    public var description: String {
        let scheme =
            switch security {
            case .implicitTLS: "smtps"
            case .startTLS: "smtp"
            case .none: "smtp+plain"
            }
        let user = username.map { Self.percentEncoded($0) + "@" } ?? ""
        let hostText = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(user)\(hostText):\(port)"
    }

    /// `%XX` sequences as bytes; nil when one is malformed or the result is not UTF-8.
    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// RFC 3986 unreserved characters as they are, every other byte as `%XX`.
    private static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if ("0"..."9").contains(scalar) || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || "-._~".unicodeScalars.contains(scalar)
            {
                result.unicodeScalars.append(scalar)
            } else {
                result += (byte < 16 ? "%0" : "%") + String(byte, radix: 16, uppercase: true)
            }
        }
        return result
    }
}
