/// Finds the one file in a complete `multipart/form-data` body (RFC 7578, RFC 2046 §5.1) without copying it.
///
/// The file part is the part whose `Content-Disposition: form-data` has a `filename` (or
/// `filename*`) parameter, as browsers, curl `-F name=@file` and the mobile HTTP libraries send
/// it; parts without one are form fields and are skipped, whatever their `Content-Type`. A part
/// with `filename=""` and no content is what a browser sends for an empty file input, and is
/// skipped too. No file part, or more than one, is an error rather than a guess.
///
/// The framing is checked strictly: a boundary delimiter is CRLF `--boundary` (the first may
/// open the body), followed by `--` to close, or by optional spaces and tabs and CRLF; a
/// `--boundary` followed by anything else is data, as in Go's `mime/multipart`. Part header
/// lines end in CRLF and are validated like HTTP fields; `Content-Disposition` must be
/// `form-data` with a `name`, and no parameter may appear twice. The preamble and the epilogue
/// are ignored. Work is linear in the body: the scan looks for CR a word at a time.
public enum MultipartFormData {
    /// Bounds on the framing; the file's size is bounded by the route's body limit.
    public struct Limits: Sendable, Hashable {
        /// Most parts in a body, fields included.
        public var maxParts: Int = 16
        /// Largest header section of one part, its final empty line included.
        public var maxPartHeadBytes: Int = 8 * 1024

        public init() {}

        public static let `default` = Limits()
    }

    /// The file part: where its bytes are in the body and what its header section says about them.
    public struct FilePart: Sendable, Hashable {
        /// The form field's name (the `name` parameter).
        public let name: String
        /// The file name the client sent, for information only: never a path to use. `nil` if
        /// only a `filename*` was sent that is not `UTF-8''` percent-encoded.
        public let filename: String?
        /// The part's `Content-Type` value as sent, without surrounding whitespace; `nil` if absent.
        public let contentType: String?
        /// The file's bytes: indices into the body that was parsed.
        public let range: Range<Int>

        public init(name: String, filename: String?, contentType: String?, range: Range<Int>) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.range = range
        }
    }

    /// The boundary of a `multipart/form-data` content type, or nil if the type is another one,
    /// the parameters are malformed, `boundary` is missing or repeated, or its value is not 1 to
    /// 70 RFC 2046 `bchars` ending in a non-space. Type, subtype and parameter names are
    /// case-insensitive; the value may be a token or a quoted string.
    public static func boundary(fromContentType contentType: String) -> String? {
        var contentType = contentType
        return contentType.withUTF8 { bytes -> String? in
            var i = skipOWS(bytes, from: 0)
            let typeStart = i
            while i < bytes.count, ASCII.isToken(bytes[i]) || bytes[i] == UInt8(ascii: "/") { i += 1 }
            guard ASCII.equalsIgnoringCase(UnsafeBufferPointer(rebasing: bytes[typeStart..<i]), "multipart/form-data") else { return nil }
            var boundary: [UInt8]?
            while true {
                i = skipOWS(bytes, from: i)
                if i == bytes.count { break }
                guard bytes[i] == UInt8(ascii: ";") else { return nil }
                i = skipOWS(bytes, from: i + 1)
                if i == bytes.count { break }  // a trailing ";" is harmless
                let nameStart = i
                while i < bytes.count, ASCII.isToken(bytes[i]) { i += 1 }
                let name = UnsafeBufferPointer(rebasing: bytes[nameStart..<i])
                guard !name.isEmpty, i < bytes.count, bytes[i] == UInt8(ascii: "=") else { return nil }
                i += 1
                guard let value = parameterValue(bytes, &i) else { return nil }
                if ASCII.equalsIgnoringCase(name, "boundary") {
                    guard boundary == nil else { return nil }
                    boundary = unescaped(bytes, value)
                }
            }
            guard let boundary, isValidBoundary(boundary) else { return nil }
            return String(decoding: boundary, as: UTF8.self)
        }
    }

    /// The single file part of a complete body, found without copying it.
    public static func filePart(in body: [UInt8], boundary: String, limits: Limits = .default) throws(MultipartError) -> FilePart {
        let result = body.withUnsafeBytes { bytes in
            Result { () throws(MultipartError) in try filePart(in: bytes, boundary: boundary, limits: limits) }
        }
        return try result.get()
    }

    /// The single file part of a complete body, found without copying it; `range` indexes `body`.
    public static func filePart(
        in body: UnsafeRawBufferPointer, boundary: String,
        limits: Limits = .default
    ) throws(MultipartError) -> FilePart {
        let boundaryBytes = Array(boundary.utf8)
        guard isValidBoundary(boundaryBytes) else { throw .invalidBoundary }
        let parser = Parser(body: body, delimiter: [ASCII.cr, ASCII.lf, dash, dash] + boundaryBytes, limits: limits)
        return try parser.run()
    }

    // MARK: - The body

    static let dash = UInt8(ascii: "-")

    /// A parameter value: its bytes in the header, and whether they are a quoted string's inside.
    struct Value {
        var range: Range<Int>
        var quoted: Bool
    }

    /// What a part's header section says, as ranges into the body; strings are made for the file part only.
    struct PartHead {
        var hasDisposition = false
        var name: Value?
        var filename: Value?
        var extendedFilename: Value?
        var contentType: Range<Int>?

        var isFile: Bool { filename != nil || extendedFilename != nil }
    }

    struct Parser {
        let raw: UnsafeRawBufferPointer
        let body: UnsafeBufferPointer<UInt8>
        /// CRLF "--" boundary.
        let delimiter: [UInt8]
        let limits: Limits

        init(body: UnsafeRawBufferPointer, delimiter: [UInt8], limits: Limits) {
            raw = body
            self.body = body.bindMemory(to: UInt8.self)
            self.delimiter = delimiter
            self.limits = limits
        }

        func run() throws(MultipartError) -> FilePart {
            var position = try firstDelimiterEnd()
            var parts = 0
            var file: (head: PartHead, range: Range<Int>)?
            while true {
                // After "--boundary": "--" closes; otherwise transport padding and CRLF open a part.
                guard position < body.count else { throw .malformed(because: "The body ends before the closing delimiter.") }
                if body[position] == dash {
                    guard position + 1 < body.count, body[position + 1] == dash else {
                        throw .malformed(because: "A boundary line is malformed.")
                    }
                    break  // the epilogue is ignored
                }
                while position < body.count, ASCII.isWhitespace(body[position]) { position += 1 }
                guard position + 1 < body.count, body[position] == ASCII.cr, body[position + 1] == ASCII.lf else {
                    throw .malformed(because: "A boundary line is malformed.")
                }
                position += 2
                parts += 1
                guard parts <= limits.maxParts else { throw .tooManyParts }

                let (head, contentStart) = try parseHead(from: position)
                // The CRLF ending the header section may be the delimiter's own: a part with no content.
                guard let end = nextDelimiter(from: contentStart - 2) else {
                    throw .malformed(because: "The body ends before the closing delimiter.")
                }
                let range = min(contentStart, end)..<end
                if head.isFile && !(range.isEmpty && head.filename.map(\.range.isEmpty) == true) {
                    guard file == nil else { throw .multipleFileParts }
                    file = (head, range)
                }
                position = end + delimiter.count
            }
            guard let file, let name = file.head.name else { throw .noFilePart }
            return FilePart(
                name: string(name), filename: filename(file.head),
                contentType: file.head.contentType.map { string(Value(range: $0, quoted: false)) }, range: file.range)
        }

        /// Where the first delimiter ends: `--boundary` may open the body; otherwise a preamble precedes CRLF `--boundary`.
        func firstDelimiterEnd() throws(MultipartError) -> Int {
            let dashBoundary = delimiter.count - 2
            if body.count >= dashBoundary, matches(at: 0, from: 2), isDelimiterEnd(dashBoundary) {
                return dashBoundary
            }
            guard let start = nextDelimiter(from: 0) else { throw .malformed(because: "The body has no boundary delimiter.") }
            return start + delimiter.count
        }

        /// Whether the byte at `index` can follow a delimiter: "-", space, tab, CR, LF, or the end of
        /// the body. LF is there to call a bare-LF boundary line malformed rather than data.
        func isDelimiterEnd(_ index: Int) -> Bool {
            guard index < body.count else { return true }
            let byte = body[index]
            return byte == dash || byte == ASCII.space || byte == ASCII.tab || byte == ASCII.cr || byte == ASCII.lf
        }

        /// Whether `delimiter[skip...]` is at `index` in the body; the caller checks the length.
        func matches(at index: Int, from skip: Int) -> Bool {
            var i = skip
            while i < delimiter.count {
                if body[index + i - skip] != delimiter[i] { return false }
                i += 1
            }
            return true
        }

        /// The index of the next delimiter at or after `start`.
        func nextDelimiter(from start: Int) -> Int? {
            var i = start
            while let cr = MultipartFormData.firstIndex(of: ASCII.cr, in: raw, from: i) {
                guard cr + delimiter.count <= body.count else { return nil }  // no room left for one
                if matches(at: cr, from: 0), isDelimiterEnd(cr + delimiter.count) { return cr }
                i = cr + 1
            }
            return nil
        }

        /// Parses header lines from `start` up to and including the empty line; returns where the content starts.
        func parseHead(from start: Int) throws(MultipartError) -> (PartHead, Int) {
            let end = start <= body.count - limits.maxPartHeadBytes ? start + limits.maxPartHeadBytes : body.count
            let truncated: MultipartError =
                end < body.count
                ? .partHeadTooLarge
                : .malformed(because: "The body ends inside a part's header section.")
            var head = PartHead()
            var i = start
            while true {
                let lineStart = i
                while i < end, body[i] != ASCII.cr {
                    guard ASCII.isFieldValue(body[i]) else { throw .malformed(because: "A part header contains a forbidden character.") }
                    i += 1
                }
                guard i + 1 < end else { throw truncated }
                guard body[i + 1] == ASCII.lf else { throw .malformed(because: "A part header line does not end in CRLF.") }
                let line = lineStart..<i
                i += 2
                if line.isEmpty { break }
                try parseField(line, into: &head)
            }
            guard head.hasDisposition, head.name != nil else {
                throw .malformed(because: "A part lacks a form-data Content-Disposition with a name.")
            }
            return (head, i)
        }

        func parseField(_ line: Range<Int>, into head: inout PartHead) throws(MultipartError) {
            var i = line.lowerBound
            while i < line.upperBound, ASCII.isToken(body[i]) { i += 1 }
            guard i > line.lowerBound, i < line.upperBound, body[i] == ASCII.colon else {
                throw .malformed(because: "A part header field is malformed.")
            }
            let name = UnsafeBufferPointer(rebasing: body[line.lowerBound..<i])
            var valueStart = i + 1
            var valueEnd = line.upperBound
            while valueStart < valueEnd, ASCII.isWhitespace(body[valueStart]) { valueStart += 1 }
            while valueEnd > valueStart, ASCII.isWhitespace(body[valueEnd - 1]) { valueEnd -= 1 }
            if ASCII.equalsIgnoringCase(name, "content-disposition") {
                guard !head.hasDisposition else { throw .malformed(because: "A part has two Content-Disposition fields.") }
                head.hasDisposition = true
                try parseDisposition(valueStart..<valueEnd, into: &head)
            } else if ASCII.equalsIgnoringCase(name, "content-type") {
                guard head.contentType == nil else { throw .malformed(because: "A part has two Content-Type fields.") }
                head.contentType = valueStart..<valueEnd
            }
        }

        /// `form-data *( OWS ";" OWS name "=" value )`, keeping `name`, `filename` and `filename*`.
        func parseDisposition(_ value: Range<Int>, into head: inout PartHead) throws(MultipartError) {
            let bytes = UnsafeBufferPointer(rebasing: body[value])
            var i = 0
            while i < bytes.count, ASCII.isToken(bytes[i]) { i += 1 }
            guard ASCII.equalsIgnoringCase(UnsafeBufferPointer(rebasing: bytes[0..<i]), "form-data") else {
                throw .malformed(because: "A part's Content-Disposition is not form-data.")
            }
            while true {
                i = skipOWS(bytes, from: i)
                if i == bytes.count { return }
                guard bytes[i] == UInt8(ascii: ";") else { throw .malformed(because: "A part's Content-Disposition is malformed.") }
                i = skipOWS(bytes, from: i + 1)
                if i == bytes.count { return }
                let nameStart = i
                while i < bytes.count, ASCII.isToken(bytes[i]) { i += 1 }
                let name = UnsafeBufferPointer(rebasing: bytes[nameStart..<i])
                i = skipOWS(bytes, from: i)
                guard !name.isEmpty, i < bytes.count, bytes[i] == UInt8(ascii: "=") else {
                    throw .malformed(because: "A part's Content-Disposition is malformed.")
                }
                i = skipOWS(bytes, from: i + 1)
                guard let parsed = MultipartFormData.parameterValue(bytes, &i) else {
                    throw .malformed(because: "A part's Content-Disposition is malformed.")
                }
                let found = Value(
                    range: (value.lowerBound + parsed.range.lowerBound)..<(value.lowerBound + parsed.range.upperBound),
                    quoted: parsed.quoted)
                if ASCII.equalsIgnoringCase(name, "name") {
                    guard head.name == nil else { throw .malformed(because: "A Content-Disposition parameter is repeated.") }
                    head.name = found
                } else if ASCII.equalsIgnoringCase(name, "filename") {
                    guard head.filename == nil else { throw .malformed(because: "A Content-Disposition parameter is repeated.") }
                    head.filename = found
                } else if ASCII.equalsIgnoringCase(name, "filename*") {
                    guard head.extendedFilename == nil else { throw .malformed(because: "A Content-Disposition parameter is repeated.") }
                    head.extendedFilename = found
                }
            }
        }

        func string(_ value: Value) -> String {
            let bytes = UnsafeBufferPointer(rebasing: body[value.range])
            guard value.quoted else { return String(decoding: bytes, as: UTF8.self) }
            return String(decoding: MultipartFormData.unescaped(bytes, 0..<bytes.count), as: UTF8.self)
        }

        /// `filename`, else a `filename*` of the form `UTF-8''percent-encoded` (RFC 8187).
        func filename(_ head: PartHead) -> String? {
            if let filename = head.filename { return string(filename) }
            guard let extended = head.extendedFilename, !extended.quoted else { return nil }
            let bytes = UnsafeBufferPointer(rebasing: body[extended.range])
            let prefix = "utf-8''".utf8.count
            guard bytes.count >= prefix,
                ASCII.equalsIgnoringCase(UnsafeBufferPointer(rebasing: bytes[0..<prefix]), "utf-8''")
            else { return nil }
            var decoded: [UInt8] = []
            decoded.reserveCapacity(bytes.count - prefix)
            var i = prefix
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "%") {
                    guard i + 2 < bytes.count, let high = ASCII.hexValue(bytes[i + 1]), let low = ASCII.hexValue(bytes[i + 2]) else {
                        return nil
                    }
                    decoded.append(UInt8(high << 4 | low))
                    i += 3
                } else {
                    decoded.append(bytes[i])
                    i += 1
                }
            }
            return String(decoding: decoded, as: UTF8.self)
        }
    }

    // MARK: - Shared by the content type and the part headers

    /// A token or a quoted string at `i`, moving `i` past it; for a quoted string the range is its inside.
    static func parameterValue(_ bytes: UnsafeBufferPointer<UInt8>, _ i: inout Int) -> Value? {
        let start = i
        guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") else {
            while i < bytes.count, ASCII.isToken(bytes[i]) { i += 1 }
            return i > start ? Value(range: start..<i, quoted: false) : nil
        }
        i += 1
        while i < bytes.count, bytes[i] != UInt8(ascii: "\"") {
            i += bytes[i] == UInt8(ascii: "\\") ? 2 : 1
        }
        guard i < bytes.count else { return nil }
        i += 1
        return Value(range: (start + 1)..<(i - 1), quoted: true)
    }

    /// The inside of a quoted string with its quoted-pairs (`\x`) resolved.
    static func unescaped(_ bytes: UnsafeBufferPointer<UInt8>, _ value: Value) -> [UInt8] {
        value.quoted ? unescaped(bytes, value.range) : Array(bytes[value.range])
    }

    static func unescaped(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(range.count)
        var i = range.lowerBound
        while i < range.upperBound {
            if bytes[i] == UInt8(ascii: "\\"), i + 1 < range.upperBound { i += 1 }
            out.append(bytes[i])
            i += 1
        }
        return out
    }

    /// RFC 2046 §5.1.1: `0*69<bchars> bcharsnospace`.
    static func isValidBoundary(_ boundary: [UInt8]) -> Bool {
        guard (1...70).contains(boundary.count), boundary.last != ASCII.space else { return false }
        return boundary.allSatisfy(isBoundaryByte)
    }

    /// bchars: DIGIT / ALPHA / "'" / "(" / ")" / "+" / "_" / "," / "-" / "." / "/" / ":" / "=" / "?" / " ".
    static func isBoundaryByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"):
            return true
        default:
            return "'()+_,-./:=? ".utf8.contains(byte)
        }
    }

    static func skipOWS(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        var i = start
        while i < bytes.count, ASCII.isWhitespace(bytes[i]) { i += 1 }
        return i
    }

    /// The first index of `byte` at or after `start`, eight bytes at a time (a SWAR `memchr`).
    static func firstIndex(of byte: UInt8, in buffer: UnsafeRawBufferPointer, from start: Int) -> Int? {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let pattern = UInt64(byte) &* ones
        var i = start
        while i + 8 <= buffer.count {
            // A zero byte of `word` is a match; the lowest flagged byte is the first match (no false
            // positive lies below a true one).
            let word = UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: i, as: UInt64.self)) ^ pattern
            let found = (word &- ones) & ~word & highs
            if found != 0 { return i + found.trailingZeroBitCount / 8 }
            i += 8
        }
        while i < buffer.count {
            if buffer[i] == byte { return i }
            i += 1
        }
        return nil
    }
}
