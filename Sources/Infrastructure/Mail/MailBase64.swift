import COpenSSL

/// Padded Base64 (RFC 4648 §4) through OpenSSL's `EVP_EncodeBlock`, for AUTH and "B"
/// encoded-words: Mail does not depend on the Cryptography module and its encoder.
enum MailBase64 {
    static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        guard !input.isEmpty else { return "" }
        // EVP_EncodeBlock writes a terminating NUL after the text.
        var output = [UInt8](repeating: 0, count: encodedLength(input.count) + 1)
        let count = output.withUnsafeMutableBufferPointer { output in
            input.withUnsafeBufferPointer { EVP_EncodeBlock(output.baseAddress, $0.baseAddress, Int32($0.count)) }
        }
        return String(decoding: output[..<Int(count)], as: UTF8.self)
    }

    static func encodedLength(_ byteCount: Int) -> Int { (byteCount + 2) / 3 * 4 }
}
