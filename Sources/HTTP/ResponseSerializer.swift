/// Writes responses as HTTP/1.1 bytes.
///
/// The serializer owns message framing: it drops any `Content-Length`, `Transfer-Encoding`,
/// `Connection` or `Date` a handler set and writes its own, so a handler cannot desynchronise
/// the connection.
public enum ResponseSerializer {
    /// Appends the status line, headers and (unless `HEAD` or a status without content) the body.
    public static func serialize(_ response: Response, requestMethod: HTTPMethod, keepAlive: Bool,
                                 date: HTTPDate.Text, version: HTTPVersion = .http1_1, into buffer: inout [UInt8]) {
        buffer.reserveCapacity(buffer.count + 160 + response.headers.storage.count + response.body.count)
        appendStatusLine(response.status, into: &buffer)
        let status = response.status
        if !status.forbidsBody {
            buffer.append(contentsOf: "Content-Length: ".utf8)
            appendDecimal(response.body.count, into: &buffer)
            buffer.append(contentsOf: crlf)
        }
        buffer.append(contentsOf: "Date: ".utf8)
        buffer.append(contentsOf: date.bytes)
        buffer.append(contentsOf: crlf)
        if !keepAlive {
            buffer.append(contentsOf: "Connection: close\r\n".utf8)
        } else if version == .http1_0 {
            buffer.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        response.headers.forEachRaw { name, value in
            guard !isFramingField(name) else { return }
            buffer.append(contentsOf: name)
            buffer.append(contentsOf: ": ".utf8)
            buffer.append(contentsOf: value)
            buffer.append(contentsOf: crlf)
        }
        buffer.append(contentsOf: crlf)
        if requestMethod != .head, !status.forbidsBody {
            buffer.append(contentsOf: response.body)
        }
    }

    /// The interim response that tells a client to send its body.
    public static let continueResponse: [UInt8] = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private static let crlf: [UInt8] = [ASCII.cr, ASCII.lf]

    private static func appendStatusLine(_ status: HTTPStatus, into buffer: inout [UInt8]) {
        buffer.append(contentsOf: "HTTP/1.1 ".utf8)
        appendDecimal(status.code, into: &buffer)
        buffer.append(ASCII.space)
        buffer.append(contentsOf: status.reasonPhrase.utf8)
        buffer.append(contentsOf: crlf)
    }

    static func appendDecimal(_ value: Int, into buffer: inout [UInt8]) {
        if value < 10 {
            buffer.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
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
