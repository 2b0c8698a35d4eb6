import TestSupport
import Testing
@testable import Images

@Suite(.testThreads) struct ByteReaderTests {
    private func read<T>(_ bytes: [UInt8], _ body: (ByteReader) throws(ImageError) -> T) -> Result<T, ImageError> {
        bytes.withUnsafeBytes { buffer in
            Result { () throws(ImageError) -> T in try body(ByteReader(bytes: buffer, format: .png)) }
        }
    }

    private let bytes: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]

    @Test func readsBothByteOrders() {
        #expect(read(bytes) { r throws(ImageError) in try r.u8(7) } == .success(8))
        #expect(read(bytes) { r throws(ImageError) in try r.u16be(0) } == .success(0x0102))
        #expect(read(bytes) { r throws(ImageError) in try r.u16le(0) } == .success(0x0201))
        #expect(read(bytes) { r throws(ImageError) in try r.u24le(1) } == .success(0x04_0302))
        #expect(read(bytes) { r throws(ImageError) in try r.u32be(4) } == .success(0x0506_0708))
        #expect(read(bytes) { r throws(ImageError) in try r.u32le(4) } == .success(0x0807_0605))
        #expect(read(bytes) { r throws(ImageError) in try r.u64be(0) } == .success(0x0102_0304_0506_0708))
    }

    @Test func neverReadsPastTheEnd() {
        let short: [UInt8] = [1, 2, 3]
        let truncated = { (result: Result<Void, ImageError>) -> Bool in
            if case .failure(let error) = result { return error.code == .truncated }
            return false
        }
        #expect(truncated(read(short) { r throws(ImageError) in _ = try r.u32be(0) }))
        #expect(truncated(read(short) { r throws(ImageError) in _ = try r.u16le(2) }))
        #expect(truncated(read(short) { r throws(ImageError) in _ = try r.u8(3) }))
        #expect(truncated(read(short) { r throws(ImageError) in _ = try r.u8(-1) }))
        #expect(truncated(read(short) { r throws(ImageError) in try r.require(.max, at: 1) }))
        #expect(truncated(read(short) { r throws(ImageError) in try r.require(1, at: .max) }))
        #expect(truncated(read([]) { r throws(ImageError) in _ = try r.u8(0) }))
        #expect(read(short) { r in !r.has(-1, at: 0) && r.has(0, at: 3) && !r.has(1, at: 3) } == .success(true))
        #expect(read(short) { r in !r.matches([3, 4], at: 2) && r.matches([2, 3], at: 1) } == .success(true))
    }
}
