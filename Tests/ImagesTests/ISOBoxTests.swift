import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ISOBoxTests {
    private func box(_ bytes: [UInt8], at offset: Int = 0, parentEnd: UInt64 = .max) -> Result<ISOBox, ImageError> {
        bytes.withUnsafeBytes { buffer in
            Result { () throws(ImageError) -> ISOBox in
                try ISOBox(at: offset, parentEnd: parentEnd, ByteReader(bytes: buffer, format: .heic))
            }
        }
    }

    private func errorCode(_ result: Result<ISOBox, ImageError>) -> ImageError.Code? {
        if case .failure(let error) = result { return error.code }
        return nil
    }

    @Test func sizes() throws {
        let plain = try box(Build.box("free", [1, 2, 3])).get()
        #expect(plain.type == ISOBox.fourCC("free"))
        #expect((plain.start, plain.contentStart, plain.end) == (0, 8, 11))

        let large = try box(Build.box64("mdat", [1, 2, 3])).get()
        #expect((large.start, large.contentStart, large.end) == (0, 16, 19))

        let toTheEnd = try box(Build.be32(0) + Build.ascii("mdat"), parentEnd: 1000).get()
        #expect(toTheEnd.end == 1000)
        let toTheEndOfFile = try box(Build.be32(0) + Build.ascii("mdat")).get()
        #expect(toTheEndOfFile.end == .max)

        // Past the buffer is fine until its bytes are read.
        let beyond = try box(Build.be32(0x7FFF_FFFF) + Build.ascii("mdat")).get()
        #expect(beyond.end == 0x7FFF_FFFF)
    }

    @Test func brokenSizes() {
        for size: UInt32 in [2, 7] {
            #expect(errorCode(box(Build.be32(size) + Build.ascii("free"))) == .malformed)
        }
        #expect(errorCode(box(Build.be32(1) + Build.ascii("free") + Build.be64(15))) == .malformed)
        let overflowing = Build.box("free", []) + Build.be32(1) + Build.ascii("free") + Build.be64(.max)
        #expect(errorCode(box(overflowing, at: 8)) == .malformed)
        #expect(errorCode(box(Build.box("free", [1, 2, 3]), parentEnd: 10)) == .malformed)
        #expect(errorCode(box(Build.box64("free", []), parentEnd: 12)) == .malformed)
        #expect(errorCode(box(Build.be32(20) + Build.ascii("fre"))) == .truncated)
        #expect(errorCode(box(Build.be32(1) + Build.ascii("free") + [0, 0, 0])) == .truncated)
    }

    @Test func fourCC() {
        #expect(ISOBox.fourCC("ftyp") == 0x6674_7970)
    }
}
