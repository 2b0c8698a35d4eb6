import COpenSSL

/// Bytes from OpenSSL's CSPRNG (`RAND_bytes`), for salts and session tokens.
public enum SecureRandom {
    /// `count` bytes from the CSPRNG.
    ///
    /// Throws `SecurityError` with code `randomFailed` when the generator cannot deliver (e.g. it
    /// could not be seeded); it never returns weaker bytes. Throwing rather than trapping lets a
    /// request fail with a 500 without taking every other request down with it.
    public static func bytes(count: Int) throws -> [UInt8] {
        precondition(count >= 0 && count <= Int(Int32.max), "invalid random byte count")
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        let ok = bytes.withUnsafeMutableBufferPointer { buffer in
            RAND_bytes(buffer.baseAddress, Int32(buffer.count))
        }
        guard ok == 1 else {
            throw SecurityError.openSSL(.randomFailed, operation: "RAND_bytes")
        }
        return bytes
    }
}
