import Cryptography
import Foundation
import OneTimePasswords
import TestSupport
import Testing

/// TOTP against RFC 6238's own vectors and against codes a second implementation (Python's
/// `hmac`, run as a process) computes; QR codes read back by a real decoder (zbarimg, after
/// libvips renders the SVG).
@Suite(.testThreads) struct OneTimePasswordsTests {
    /// RFC 6238 Appendix B, SHA-1 rows: the 20-byte ASCII secret "12345678901234567890", 8 digits
    /// there, whose last 6 are this code's (the truncation is the same number modulo 10⁶).
    @Test func rfc6238Vectors() {
        let totp = TOTP(secret: Array("12345678901234567890".utf8))
        let vectors: [(Double, String)] = [
            (59, "94287082"), (1_111_111_109, "07081804"), (1_111_111_111, "14050471"), (1_234_567_890, "89005924"),
            (2_000_000_000, "69279037"), (20_000_000_000, "65353130"),
        ]
        for (time, eight) in vectors {
            #expect(totp.code(step: TOTP.step(at: time)) == String(eight.suffix(6)), "T = \(time)")
        }
    }

    /// Random secrets and times, each code computed by Python's standard library as well.
    @Test func codesMatchASecondImplementation() throws {
        var cases: [(secret: [UInt8], step: Int64)] = []
        for index in 0..<20 {
            cases.append((try SecureRandom.bytes(count: 20), Int64(index) * 7_919_993 + 1))
        }
        let script = """
            import hmac, hashlib, struct, sys
            for line in sys.argv[1:]:
                key, step = line.split(":")
                mac = hmac.new(bytes.fromhex(key), struct.pack(">Q", int(step)), hashlib.sha1).digest()
                offset = mac[19] & 15
                print("%06d" % ((int.from_bytes(mac[offset:offset + 4], "big") & 0x7fffffff) % 1000000))
            """
        let output = try run("/usr/bin/python3", ["-c", script] + cases.map { Hex.encode($0.secret) + ":" + String($0.step) })
        let expected = output.split(separator: "\n").map(String.init)
        #expect(expected.count == cases.count)
        for (index, item) in cases.enumerated() {
            #expect(TOTP(secret: item.secret).code(step: item.step) == expected[index], "case \(index)")
        }
    }

    /// One step of skew either way, at the edges of the window; nothing else, and nothing that
    /// is not six digits.
    @Test func theWindowIsOneStepEitherWay() {
        let totp = TOTP(secret: Array("12345678901234567890".utf8))
        let now = 1_111_111_111.0  // step 37,037,037, 1 s into it
        let step = TOTP.step(at: now)
        #expect(totp.matchingStep(totp.code(step: step), at: now) == step)
        #expect(totp.matchingStep(totp.code(step: step - 1), at: now) == step - 1)
        #expect(totp.matchingStep(totp.code(step: step + 1), at: now) == step + 1)
        #expect(totp.matchingStep(totp.code(step: step - 2), at: now) == nil)
        #expect(totp.matchingStep(totp.code(step: step + 2), at: now) == nil)
        // The last second of a step and the first of the next see each other's codes.
        let lastSecond = Double(step) * 30 + 29.999
        #expect(totp.matchingStep(totp.code(step: step + 1), at: lastSecond) == step + 1)
        #expect(totp.matchingStep(totp.code(step: step - 1), at: lastSecond + 0.002) == nil)
        for bad in ["", "12345", "1234567", "12345a", " 123456", "１２３４５６"] {
            #expect(totp.matchingStep(bad, at: now) == nil, "\(bad)")
        }
    }

    @Test func base32RoundTripsAndTheURINamesEverything() throws {
        #expect(Base32.encode(Array("foobar".utf8)) == "MZXW6YTBOI")
        #expect(Base32.decode("mzxw6ytboi======") == Array("foobar".utf8))
        #expect(Base32.decode("MZXW 6YTB OI") == Array("foobar".utf8))
        #expect(Base32.decode("MZXW1") == nil)
        let secret = try SecureRandom.bytes(count: 20)
        #expect(Base32.decode(Base32.encode(secret)) == secret)
        let uri = TOTP(secret: secret).uri(issuer: "Aplikasi Sehat", account: "ayu+1@example.com")
        #expect(
            uri == "otpauth://totp/Aplikasi%20Sehat:ayu%2B1%40example.com?secret=\(Base32.encode(secret))&issuer=Aplikasi%20Sehat"
                + "&algorithm=SHA1&digits=6&period=30")
    }

    /// Texts of several lengths (versions 1 to 27, a single block and many) drawn as SVG, rendered
    /// by libvips and read by zbarimg: each reads back as exactly what was encoded.
    @Test func qrCodesReadBack() throws {
        let directory = try makeTemporaryDirectory("exo-qr")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let secret = Base32.encode(try SecureRandom.bytes(count: 20))
        let texts = [
            "otpauth://totp/A:b?secret=\(secret)",
            TOTP(secret: Array("12345678901234567890".utf8)).uri(issuer: "Aplikasi Sehat", account: "ayu@example.com"),
            TOTP(secret: Array("12345678901234567890".utf8)).uri(
                issuer: "Exosphere", account: String(repeating: "long.address", count: 20) + "@x.example"),
            String(repeating: "0123456789abcdef", count: 40),
        ]
        var versions: [Int] = []
        for (index, text) in texts.enumerated() {
            let code = try QRCode(bytes: Array(text.utf8))
            versions.append(code.version)
            let svg = directory + "/code\(index).svg"
            let png = directory + "/code\(index).png"
            try code.svg(pixels: code.size * 8).write(toFile: svg, atomically: true, encoding: .utf8)
            try run("/usr/bin/vips", ["copy", svg, png])
            let read = try run("/usr/bin/zbarimg", ["--quiet", "--raw", "-Sbinary", png])
            #expect(read.hasSuffix("\n") ? String(read.dropLast()) == text : read == text, "version \(code.version): \(read.prefix(200))")
        }
        #expect(versions.first == 4 && versions.last ?? 0 >= 20, "\(versions)")
        #expect(throws: QRCode.TooLong.self) { try QRCode(bytes: [UInt8](repeating: 0x41, count: 2_332)) }
    }
}
