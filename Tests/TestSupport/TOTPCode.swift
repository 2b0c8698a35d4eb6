import Foundation

/// The TOTP code (RFC 6238: HMAC-SHA-1, 30-second steps, 6 digits) of a base32 `secret` at
/// `time`, computed by a second implementation, Python's standard library, so that a test of the
/// server's codes does not check them against the server's own code.
public func totpCode(secret: String, at time: Date) throws -> String {
    let script = """
        import base64, hmac, hashlib, struct, sys
        key = base64.b32decode(sys.argv[1] + "=" * (-len(sys.argv[1]) % 8))
        mac = hmac.new(key, struct.pack(">Q", int(float(sys.argv[2]) // 30)), hashlib.sha1).digest()
        offset = mac[19] & 15
        print("%06d" % ((int.from_bytes(mac[offset:offset + 4], "big") & 0x7fffffff) % 1000000), end="")
        """
    return try run("/usr/bin/python3", ["-c", script, secret, String(time.timeIntervalSince1970)])
}
