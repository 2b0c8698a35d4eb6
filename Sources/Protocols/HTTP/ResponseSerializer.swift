/// Writes responses as HTTP/1.1 bytes.
///
/// The serializer owns message framing: it drops any `Content-Length`, `Transfer-Encoding`,
/// `Connection` or `Date` a handler set and writes its own, so a handler cannot desynchronise
/// the connection.
public enum ResponseSerializer {
    /// Appends the status line, headers and (unless `HEAD` or a status without content) the body.
    ///
    /// A `file` body is not appended: `Content-Length` announces its length and the caller sends
    /// it after these bytes when `sendsBody` says so.
    public static func serialize(
        _ response: Response, requestMethod: HTTPMethod, keepAlive: Bool,
        date: HTTPDate.Text, version: HTTPVersion = .http1_1, into buffer: inout [UInt8]
    ) {
        let inlineBody = response.file == nil ? response.body.count : 0
        buffer.reserveCapacity(buffer.count + 160 + response.headers.storage.count + inlineBody)
        appendStatusLine(response.status, into: &buffer)
        let status = response.status
        if !status.forbidsBody {
            if let length = response.bodyLength {
                append("Content-Length: ", to: &buffer)
                appendDecimal(length, into: &buffer)
                appendCRLF(&buffer)
            } else if version == .http1_1 {
                // An HTTP/1.0 client reads such a body until the connection closes (`closesAfter`).
                append("Transfer-Encoding: chunked\r\n", to: &buffer)
            }
        }
        append("Date: ", to: &buffer)
        buffer.append(contentsOf: date.bytes)
        appendCRLF(&buffer)
        if !keepAlive {
            append("Connection: close\r\n", to: &buffer)
        } else if version == .http1_0 {
            append("Connection: keep-alive\r\n", to: &buffer)
        }
        response.headers.forEachRaw { name, value in
            guard !isFramingField(name) else { return }
            buffer.append(contentsOf: name)
            append(": ", to: &buffer)
            buffer.append(contentsOf: value)
            appendCRLF(&buffer)
        }
        appendCRLF(&buffer)
        if response.file == nil, sendsBody(status: status, requestMethod: requestMethod) {
            buffer.append(contentsOf: response.body)
        }
    }

    /// Whether the connection must close after this response to end its body: a body of unknown
    /// length to an HTTP/1.0 client, which cannot read chunks.
    public static func closesAfter(_ response: Response, version: HTTPVersion) -> Bool {
        version == .http1_0 && response.bodyLength == nil
    }

    /// Frames `bytes` as one chunk of a chunked body (RFC 9112 §7.1); empty bytes are the last chunk.
    public static func appendChunk(_ bytes: [UInt8], into buffer: inout [UInt8]) {
        let digits = Array(String(bytes.count, radix: 16).utf8)
        buffer.append(contentsOf: digits)
        appendCRLF(&buffer)
        buffer.append(contentsOf: bytes)
        appendCRLF(&buffer)
    }

    /// Whether a body follows the head: not for `HEAD`, nor for 1xx, 204 and 304.
    @inline(__always)
    public static func sendsBody(status: HTTPStatus, requestMethod: HTTPMethod) -> Bool {
        requestMethod != .head && !status.forbidsBody
    }

    @inline(__always)
    private static func append(_ text: StaticString, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// The interim response that tells a client to send its body.
    public static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    @inline(__always)
    private static func appendCRLF(_ buffer: inout [UInt8]) {
        buffer.append(ASCII.cr)
        buffer.append(ASCII.lf)
    }

    private static func appendStatusLine(_ status: HTTPStatus, into buffer: inout [UInt8]) {
        append("HTTP/1.1 ", to: &buffer)
        appendDecimal(status.code, into: &buffer)
        buffer.append(ASCII.space)
        var reason = status.reasonPhrase
        reason.withUTF8 { buffer.append(contentsOf: $0) }
        appendCRLF(&buffer)
    }

    static func appendDecimal(_ value: Int, into buffer: inout [UInt8]) {
        if value < 10 {
            buffer.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { raw in
            while rest > 0 {
                raw[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            }
            for i in stride(from: count - 1, through: 0, by: -1) { buffer.append(raw[i]) }
        }
    }

    private static func isFramingField(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        switch name.count {
        case 4: return ASCII.equalsIgnoringCase(name, "date")
        case 10: return ASCII.equalsIgnoringCase(name, "connection")
        case 14: return ASCII.equalsIgnoringCase(name, "content-length")
        case 17: return ASCII.equalsIgnoringCase(name, "transfer-encoding")
        default: return false
        }
    }
}
