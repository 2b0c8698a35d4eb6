import Cryptography

/// Time-based one-time passwords (RFC 6238) as authenticator apps make them: HMAC-SHA-1 of the
/// number of 30-second steps since the Unix epoch (RFC 4226's HOTP), truncated to 6 digits.
public struct TOTP: Sendable {
    /// The shared secret: 20 bytes (160 bits, RFC 4226's recommendation) from a CSPRNG.
    public let secret: [UInt8]
    public static let digits = 6
    public static let stepSeconds: Int64 = 30
    /// Steps of clock skew accepted either way (RFC 6238 §5.2 recommends at most one).
    public static let skewSteps: Int64 = 1

    public init(secret: [UInt8]) {
        self.secret = secret
    }

    /// A new secret of 160 bits.
    public static func generate() throws -> TOTP {
        TOTP(secret: try SecureRandom.bytes(count: 20))
    }

    /// The step that `unixSeconds` falls in.
    public static func step(at unixSeconds: Double) -> Int64 {
        Int64((unixSeconds / Double(stepSeconds)).rounded(.down))
    }

    /// The code of `step`, six digits with leading zeros (RFC 4226 §5.3's dynamic truncation).
    public func code(step: Int64) -> String {
        var counter = [UInt8](repeating: 0, count: 8)
        var value = UInt64(bitPattern: step)
        for index in (0..<8).reversed() {
            counter[index] = UInt8(value & 0xFF)
            value >>= 8
        }
        let mac = HMAC.sha1(key: secret, message: counter)
        let offset = Int(mac[19] & 0x0F)
        let binary =
            (UInt32(mac[offset] & 0x7F) << 24) | (UInt32(mac[offset + 1]) << 16) | (UInt32(mac[offset + 2]) << 8) | UInt32(mac[offset + 3])
        let number = String(binary % 1_000_000)
        return String(repeating: "0", count: Self.digits - number.count) + number
    }

    /// The step within the skew of `unixSeconds` whose code is `code`, or nil. Every step in
    /// the window is computed and compared in constant time, so the answer's timing says nothing
    /// of which step matched. The caller accepts a step once (a replay in its window is refused).
    public func matchingStep(_ code: String, at unixSeconds: Double) -> Int64? {
        let given = Array(code.utf8)
        guard given.count == Self.digits, given.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        let now = Self.step(at: unixSeconds)
        var found: Int64?
        for step in (now - Self.skewSteps)...(now + Self.skewSteps) {
            if ConstantTime.equals(Array(self.code(step: step).utf8), given), found == nil { found = step }
        }
        return found
    }

    /// The `otpauth://` URI authenticator apps read from a QR code (Google Authenticator's key
    /// URI format): the label `issuer:account`, and the secret, issuer, algorithm, digits, period.
    public func uri(issuer: String, account: String) -> String {
        let label = Self.percentEncoded(issuer) + ":" + Self.percentEncoded(account)
        return "otpauth://totp/\(label)?secret=\(Base32.encode(secret))&issuer=\(Self.percentEncoded(issuer))"
            + "&algorithm=SHA1&digits=\(Self.digits)&period=\(Self.stepSeconds)"
    }

    /// RFC 3986's unreserved characters kept, every other byte of the UTF-8 percent-encoded.
    static func percentEncoded(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                result += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0x0F, radix: 16, uppercase: true)
            }
        }
        return result
    }
}

/// RFC 4648 base32 (upper case, no padding), as authenticator apps take a secret.
public enum Base32 {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567".utf8)

    public static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | UInt32(byte)
            bits += 8
            while bits >= 5 {
                output.append(alphabet[Int((buffer >> UInt32(bits - 5)) & 31)])
                bits -= 5
            }
        }
        if bits > 0 { output.append(alphabet[Int((buffer << UInt32(5 - bits)) & 31)]) }
        return String(decoding: output, as: UTF8.self)
    }

    /// Upper or lower case, spaces and padding ignored; nil for any other character.
    public static func decode(_ text: String) -> [UInt8]? {
        var output: [UInt8] = []
        var buffer: UInt32 = 0
        var bits = 0
        for byte in text.utf8 where byte != UInt8(ascii: " ") && byte != UInt8(ascii: "=") {
            let upper = (byte >= 0x61 && byte <= 0x7A) ? byte - 32 : byte
            guard let value = alphabet.firstIndex(of: upper) else { return nil }
            buffer = (buffer << 5) | UInt32(value)
            bits += 5
            if bits >= 8 {
                output.append(UInt8((buffer >> UInt32(bits - 8)) & 0xFF))
                bits -= 8
            }
        }
        return output
    }
}
