/// The DATA section of an SMTP transaction (RFC 5321 §4.5.2): a line that starts with "." gets
/// one more, and the message ends with a line holding a single ".".
enum DotStuffing {
    /// `message` (CRLF line ends) stuffed and terminated, ready to follow the 354 reply.
    static func encode(_ message: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(message.count + 16)
        var atLineStart = true
        for byte in message {
            if atLineStart, byte == UInt8(ascii: ".") { output.append(UInt8(ascii: ".")) }
            output.append(byte)
            atLineStart = byte == UInt8(ascii: "\n")
        }
        // The terminator is CRLF "." CRLF: the last line must be ended before it.
        if !output.isEmpty, !atLineStart { output += [UInt8(ascii: "\r"), UInt8(ascii: "\n")] }
        return output + Array(".\r\n".utf8)
    }
}
