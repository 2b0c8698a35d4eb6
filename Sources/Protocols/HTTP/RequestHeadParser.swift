/// An incremental parser for the request line and header section (RFC 9112 §§2–5).
///
/// Feed it the bytes received so far, always starting at the first byte of the request; it
/// remembers how far it has scanned, so a head that arrives one byte at a time costs O(n).
/// Strict where laxness enables request smuggling: CRLF only, no obs-fold, no whitespace before
/// a colon, no controls in values, one Host, one valid Content-Length, chunked last.
public struct RequestHeadParser: Sendable {
    /// The outcome of one call.
    public enum Result: Sendable {
        /// The head is complete and used this many bytes; the body (if any) starts after them.
        case complete(RequestHead, consumed: Int)
        /// Call again when more bytes have arrived.
        case needMore
        /// The request is invalid; answer with the error's status and close.
        case failed(HTTPParseError)
    }

    public let limits: HTTPLimits

    /// Bytes already checked for line ends.
    private var scanned = 0
    /// Start of the line being scanned.
    private var lineStart = 0
    /// Start of the request line, after any empty lines before it.
    private var headStart = 0
    private var lineCount = 0

    public init(limits: HTTPLimits = .default) {
        self.limits = limits
    }

    /// Forgets the current request so the next call starts a new one.
    public mutating func reset() {
        scanned = 0
        lineStart = 0
        headStart = 0
        lineCount = 0
    }

    /// Parses `buffer`, which holds the request from its first byte on.
    public mutating func parse(_ buffer: UnsafeRawBufferPointer) -> Result {
        let bytes = buffer.bindMemory(to: UInt8.self)
        let end = bytes.count
        var i = scanned
        while i < end {
            let byte = bytes[i]
            if byte == ASCII.lf {
                // A limit crossed before this LF wins, as it would have if the bytes came one at a time.
                if let error = limitFailure(end: i) { return .failed(error) }
                guard i > lineStart, bytes[i - 1] == ASCII.cr else { return .failed(.bareLF) }
                let lineLength = i - 1 - lineStart
                if lineCount == 0 {
                    if lineLength == 0 {
                        // RFC 9112 §2.2: empty lines before the request line are ignored, a few of them.
                        guard lineStart < 8 else { return .failed(.invalidRequestLine) }
                        lineStart = i + 1
                        headStart = lineStart
                        i += 1
                        continue
                    }
                } else if lineLength == 0 {
                    let consumed = i + 1
                    let result = RequestHeadParser.parseHead(UnsafeBufferPointer(rebasing: bytes[headStart..<consumed]), limits: limits)
                    reset()
                    switch result {
                    case .success(let head): return .complete(head, consumed: consumed)
                    case .failure(let error): return .failed(error)
                    }
                } else if lineCount > limits.maxHeaderCount {
                    return .failed(.tooManyHeaders)
                }
                lineCount += 1
                lineStart = i + 1
            }
            i += 1
        }
        scanned = end
        // Fail early on a line or head that can no longer fit, rather than waiting for its end.
        if let error = limitFailure(end: end) { return .failed(error) }
        return .needMore
    }

    /// The limit that the first `end` bytes have crossed, if any. The line being scanned may hold
    /// one byte more than its limit (its CR), the head exactly `maxHeaderBytes`. When both are
    /// crossed, the one crossed first wins, so the answer never depends on how the bytes arrived.
    private func limitFailure(end: Int) -> HTTPParseError? {
        let lineLimit = lineCount == 0 ? limits.maxRequestLineBytes : limits.maxFieldBytes
        let lineOver = lineStart + lineLimit + 2  // the shortest buffer in which the line is too long
        let headOver = headStart + limits.maxHeaderBytes + 1
        guard end >= min(lineOver, headOver) else { return nil }
        if lineOver <= headOver { return lineCount == 0 ? .requestLineTooLong : .fieldTooLarge }
        return .headersTooLarge
    }

    // MARK: - Whole-head validation

    /// Parses a complete head: the request line, fields and the final empty line, all CRLF-terminated.
    static func parseHead(_ head: UnsafeBufferPointer<UInt8>, limits: HTTPLimits) -> Swift.Result<RequestHead, HTTPParseError> {
        if head.count > limits.maxHeaderBytes { return .failure(.headersTooLarge) }
        // Request line.
        guard let requestLineEnd = lineEnd(head, from: 0) else { return .failure(.bareCR) }
        var pos = 0
        while pos < requestLineEnd, ASCII.isToken(head[pos]) { pos += 1 }
        guard pos > 0 else { return .failure(.invalidMethod) }
        guard pos < requestLineEnd, head[pos] == ASCII.space else {
            return .failure(pos < requestLineEnd && !ASCII.isWhitespace(head[pos]) ? .invalidMethod : .invalidRequestLine)
        }
        let method = HTTPMethod.from(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: head[0..<pos])))
        pos += 1
        let targetStart = pos
        while pos < requestLineEnd, head[pos] != ASCII.space {
            guard ASCII.isTargetByte(head[pos]) else { return .failure(.invalidTarget) }
            pos += 1
        }
        guard pos > targetStart else { return .failure(.invalidRequestLine) }
        let targetBytes = UnsafeBufferPointer(rebasing: head[targetStart..<pos])
        guard pos < requestLineEnd, head[pos] == ASCII.space else { return .failure(.invalidRequestLine) }
        pos += 1
        let version: HTTPVersion
        switch parseVersion(UnsafeBufferPointer(rebasing: head[pos..<requestLineEnd])) {
        case .success(let parsed): version = parsed
        case .failure(let error): return .failure(error)
        }
        guard validTargetForm(targetBytes, method: method) else { return .failure(.invalidTarget) }

        // Fields: kept in one copy of the head bytes with offsets into it.
        let storage = [UInt8](head)
        var fields: [HTTPHeaders.Field] = []
        fields.reserveCapacity(8)
        var lineStart = requestLineEnd + 2
        while true {
            guard let end = lineEnd(head, from: lineStart) else { return .failure(.bareCR) }
            if end == lineStart { break }
            if fields.count >= limits.maxHeaderCount { return .failure(.tooManyHeaders) }
            switch parseField(head, start: lineStart, end: end) {
            case .success(let field): fields.append(field)
            case .failure(let error): return .failure(error)
            }
            lineStart = end + 2
        }
        let headers = HTTPHeaders(storage: storage, fields: fields)
        return interpret(
            method: method, target: String(decoding: targetBytes, as: UTF8.self), version: version,
            headers: headers, storage: head)
    }

    /// Index of the CR of the CRLF ending the line that starts at `start`; nil for a bare CR (the
    /// head ends in CRLF, so a line without its CRLF cannot be the reason).
    private static func lineEnd(_ head: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var i = start
        while i + 1 < head.count {
            if head[i] == ASCII.cr { return head[i + 1] == ASCII.lf ? i : nil }
            i += 1
        }
        return nil
    }

    private static func parseVersion(_ bytes: UnsafeBufferPointer<UInt8>) -> Swift.Result<HTTPVersion, HTTPParseError> {
        // HTTP-version = "HTTP" "/" DIGIT "." DIGIT, case-sensitive.
        guard bytes.count == 8, bytes[0] == UInt8(ascii: "H"), bytes[1] == UInt8(ascii: "T"), bytes[2] == UInt8(ascii: "T"),
            bytes[3] == UInt8(ascii: "P"), bytes[4] == UInt8(ascii: "/"), bytes[6] == UInt8(ascii: "."),
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[5]),
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[7])
        else { return .failure(bytes.contains(ASCII.cr) ? .bareCR : .invalidVersion) }
        let major = Int(bytes[5] - UInt8(ascii: "0"))
        let minor = Int(bytes[7] - UInt8(ascii: "0"))
        guard major == 1 else { return .failure(.unsupportedVersion) }
        return .success(minor == 0 ? .http1_0 : .http1_1)
    }

    /// origin-form for every method, absolute-form (http/https) too, asterisk-form for OPTIONS.
    /// authority-form (CONNECT) is refused: this server is no proxy.
    private static func validTargetForm(_ target: UnsafeBufferPointer<UInt8>, method: HTTPMethod) -> Bool {
        if target[0] == UInt8(ascii: "/") { return true }
        if target.count == 1, target[0] == UInt8(ascii: "*") { return method == .options }
        // absolute-form: scheme "://" authority ...
        let lowered = target.prefix(8).map(ASCII.lower)
        let schemeEnd = lowered.starts(with: "http://".utf8) ? 7 : lowered.starts(with: "https://".utf8) ? 8 : 0
        // An http(s) URI with an empty host is invalid and must be rejected (RFC 9110 §4.2.1).
        guard schemeEnd > 0, target.count > schemeEnd else { return false }
        return !"/?#:".utf8.contains(target[schemeEnd])
    }

    private static func parseField(_ head: UnsafeBufferPointer<UInt8>, start: Int, end: Int) -> Swift.Result<HTTPHeaders.Field, HTTPParseError> {
        if ASCII.isWhitespace(head[start]) { return .failure(.obsFold) }
        var pos = start
        while pos < end, ASCII.isToken(head[pos]) { pos += 1 }
        guard pos < end else { return .failure(.invalidFieldName) }
        if head[pos] != ASCII.colon {
            return .failure(ASCII.isWhitespace(head[pos]) ? .whitespaceBeforeColon : .invalidFieldName)
        }
        guard pos > start else { return .failure(.invalidFieldName) }
        let nameEnd = pos
        pos += 1
        while pos < end, ASCII.isWhitespace(head[pos]) { pos += 1 }
        var valueEnd = end
        while valueEnd > pos, ASCII.isWhitespace(head[valueEnd - 1]) { valueEnd -= 1 }
        for i in pos..<valueEnd {
            guard ASCII.isFieldValue(head[i]) else { return .failure(head[i] == ASCII.cr ? .bareCR : .invalidFieldValue) }
        }
        return .success(
            HTTPHeaders.Field(
                nameStart: Int32(start), nameLength: Int32(nameEnd - start),
                valueStart: Int32(pos), valueLength: Int32(valueEnd - pos)))
    }

    // MARK: - Semantics of the fields that frame the message

    /// Reads the fields that frame the message; `storage` holds the bytes the fields point into.
    private static func interpret(
        method: HTTPMethod, target: String, version: HTTPVersion, headers: HTTPHeaders,
        storage: UnsafeBufferPointer<UInt8>
    ) -> Swift.Result<RequestHead, HTTPParseError> {
        var hostCount = 0
        var contentLength: Int?
        var contentLengthCount = 0
        var transferCodings: [TransferCoding] = []
        var sawTransferEncoding = false
        var connectionClose = false
        var connectionKeepAlive = false
        var expectContinue = false
        var failure: HTTPParseError?

        for field in headers.fields {
            let name = UnsafeBufferPointer(rebasing: storage[Int(field.nameStart)..<Int(field.nameStart + field.nameLength)])
            let value = UnsafeBufferPointer(rebasing: storage[Int(field.valueStart)..<Int(field.valueStart + field.valueLength)])
            switch name.count {
            case 4 where ASCII.equalsIgnoringCase(name, "host"):
                hostCount += 1
                if !validHost(value) { return .failure(.invalidHost) }
            case 14 where ASCII.equalsIgnoringCase(name, "content-length"):
                contentLengthCount += 1
                contentLength = parseContentLength(value)
                if contentLength == nil { return .failure(.invalidContentLength) }
            case 17 where ASCII.equalsIgnoringCase(name, "transfer-encoding"):
                sawTransferEncoding = true
                forEachListElement(value) { element in
                    if failure != nil { return }
                    guard let element, let coding = TransferCoding(element) else {
                        failure = .unsupportedTransferCoding
                        return
                    }
                    transferCodings.append(coding)
                }
            case 10 where ASCII.equalsIgnoringCase(name, "connection"):
                forEachListElement(value) { element in
                    guard let element else { return }
                    if ASCII.equalsIgnoringCase(element, "close") { connectionClose = true }
                    if ASCII.equalsIgnoringCase(element, "keep-alive") { connectionKeepAlive = true }
                }
            case 6 where ASCII.equalsIgnoringCase(name, "expect"):
                if ASCII.equalsIgnoringCase(value, "100-continue") {
                    expectContinue = version == .http1_1
                } else {
                    return .failure(.unsupportedExpectation)
                }
            default:
                break
            }
            if let failure { return .failure(failure) }
        }
        if version == .http1_1 {
            if hostCount == 0 { return .failure(.missingHost) }
        }
        if hostCount > 1 { return .failure(.duplicateHost) }
        if contentLengthCount > 1 { return .failure(.duplicateContentLength) }

        var framing = BodyFraming.none
        if sawTransferEncoding {
            if contentLengthCount > 0 { return .failure(.contentLengthWithTransferEncoding) }
            if version == .http1_0 { return .failure(.transferEncodingInHTTP10) }
            guard transferCodings.last == .chunked, transferCodings.filter({ $0 == .chunked }).count == 1 else {
                return .failure(.chunkedNotFinal)
            }
            // gzip and friends are valid framing, but this server does not decode them.
            guard transferCodings.count == 1 else { return .failure(.unsupportedTransferCoding) }
            framing = .chunked
        } else if let contentLength, contentLength > 0 {
            framing = .contentLength(contentLength)
        }
        let keepAlive = version == .http1_1 ? !connectionClose : (connectionKeepAlive && !connectionClose)
        var head = RequestHead(
            method: method, target: target, version: version, headers: headers,
            framing: framing, keepAlive: keepAlive, expectContinue: expectContinue)
        if case .none = framing { head.expectContinue = false }
        return .success(head)
    }

    private enum TransferCoding: Equatable {
        case chunked, gzip, deflate, compress

        init?(_ token: UnsafeBufferPointer<UInt8>) {
            if ASCII.equalsIgnoringCase(token, "chunked") {
                self = .chunked
            } else if ASCII.equalsIgnoringCase(token, "gzip") || ASCII.equalsIgnoringCase(token, "x-gzip") {
                self = .gzip
            } else if ASCII.equalsIgnoringCase(token, "deflate") {
                self = .deflate
            } else if ASCII.equalsIgnoringCase(token, "compress") || ASCII.equalsIgnoringCase(token, "x-compress") {
                self = .compress
            } else {
                return nil
            }
        }
    }

    /// Content-Length = 1*DIGIT, at most 18 digits so it cannot overflow.
    private static func parseContentLength(_ value: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !value.isEmpty, value.count <= 18 else { return nil }
        var result = 0
        for byte in value {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            result = result * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return result
    }

    /// uri-host [ ":" port ]: reg-name, IPv4 or a bracketed IP literal; no userinfo, path or spaces.
    private static func validHost(_ value: UnsafeBufferPointer<UInt8>) -> Bool {
        value.allSatisfy { ASCII.isHostByte($0) }
    }

    /// Calls `body` with each trimmed, non-empty element of a comma-separated list; nil for an
    /// element that is not a plain token (one with parameters, say).
    private static func forEachListElement(_ value: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>?) -> Void) {
        var start = 0
        while start <= value.count {
            var end = start
            while end < value.count, value[end] != UInt8(ascii: ",") { end += 1 }
            var s = start
            var e = end
            while s < e, ASCII.isWhitespace(value[s]) { s += 1 }
            while e > s, ASCII.isWhitespace(value[e - 1]) { e -= 1 }
            let element = UnsafeBufferPointer(rebasing: value[s..<e])
            // RFC 9110 §5.6.1: empty list elements are ignored.
            if !element.isEmpty {
                body(element.allSatisfy(ASCII.isToken) ? element : nil)
            }
            start = end + 1
        }
    }
}
