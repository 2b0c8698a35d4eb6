/// A strict RFC 8259 parser with limits, safe to run on hostile request bodies.
///
/// - Exactly one value, optionally surrounded by space, tab, CR and LF.
/// - Strings must be well-formed UTF-8; `\u` escapes must pair surrogates; raw control characters
///   are refused. Non-ASCII bytes outside strings are plain syntax errors (`invalid_json`).
/// - A UTF-8 byte order mark is refused (`invalid_json`): RFC 8259 forbids sending one.
/// - No comments, trailing commas, `NaN`, `Infinity`, leading zeros or leading `+`.
/// - Duplicate keys are refused (`duplicate_key`), so a body cannot say two things at once.
/// - The input size is checked before parsing; nesting is tracked on an explicit stack, never by
///   recursion, and refused as soon as it exceeds `JSONLimits.maxDepth`.
public enum JSONParser {
    public static func parse(_ bytes: [UInt8], limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        try check(size: bytes.count, limits: limits)
        let result = bytes.withUnsafeBufferPointer { buffer in
            Result { () throws(JSONError) in
                var engine = Engine(buffer, limits: limits)
                return try engine.parseDocument()
            }
        }
        return try result.get()
    }

    public static func parse(_ buffer: UnsafeRawBufferPointer, limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        try check(size: buffer.count, limits: limits)
        let result = buffer.withMemoryRebound(to: UInt8.self) { buffer in
            Result { () throws(JSONError) in
                var engine = Engine(buffer, limits: limits)
                return try engine.parseDocument()
            }
        }
        return try result.get()
    }

    public static func parse(_ string: String, limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        var string = string
        try check(size: string.utf8.count, limits: limits)
        let result = string.withUTF8 { buffer in
            Result { () throws(JSONError) in
                var engine = Engine(buffer, limits: limits)
                return try engine.parseDocument()
            }
        }
        return try result.get()
    }

    public static func parse(_ bytes: some Collection<UInt8>, limits: JSONLimits = .default) throws(JSONError) -> JSONValue {
        try check(size: bytes.count, limits: limits)
        let result = bytes.withContiguousStorageIfAvailable { buffer in
            Result { () throws(JSONError) in
                var engine = Engine(buffer, limits: limits)
                return try engine.parseDocument()
            }
        }
        if let result { return try result.get() }
        return try parse(Array(bytes), limits: limits)
    }

    private static func check(size: Int, limits: JSONLimits) throws(JSONError) {
        if size > limits.maxBytes {
            throw JSONError(code: .tooLarge, byteOffset: limits.maxBytes, reason: "the document is larger than allowed")
        }
    }
}

extension JSONParser {
    /// The parser proper, over a buffer that outlives it.
    struct Engine {
        private let bytes: UnsafeBufferPointer<UInt8>
        private let count: Int
        private var position = 0
        private let limits: JSONLimits
        /// Reused for every string that holds escapes, so unescaping does not allocate per string.
        private var scratch: [UInt8] = []

        init(_ bytes: UnsafeBufferPointer<UInt8>, limits: JSONLimits) {
            self.bytes = bytes
            self.count = bytes.count
            self.limits = limits
        }

        var isAtEnd: Bool { position == count }

        /// An array or object still open, with what has been read of it so far.
        private struct Frame {
            var isObject: Bool
            var array: [JSONValue] = []
            var object = JSONObject()
            /// The key whose value is being read, in an object.
            var key = ""
        }

        mutating func parseDocument() throws(JSONError) -> JSONValue {
            if count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF {
                throw JSONError(code: .invalidJSON, byteOffset: 0, reason: "a byte order mark is not allowed")
            }
            skipWhitespace()
            var stack: [Frame] = []
            var value: JSONValue

            nextValue: while true {
                // Read one value, or open a container and come back for its first member.
                guard position < count else { throw unexpectedEnd() }
                switch bytes[position] {
                case UInt8(ascii: "["):
                    try checkDepth(stack.count)
                    position += 1
                    skipWhitespace()
                    if position < count, bytes[position] == UInt8(ascii: "]") {
                        position += 1
                        value = .array([])
                    } else {
                        stack.append(Frame(isObject: false))
                        continue nextValue
                    }
                case UInt8(ascii: "{"):
                    try checkDepth(stack.count)
                    position += 1
                    skipWhitespace()
                    if position < count, bytes[position] == UInt8(ascii: "}") {
                        position += 1
                        value = .object(JSONObject())
                    } else {
                        var frame = Frame(isObject: true)
                        try parseKey(into: &frame)
                        stack.append(frame)
                        continue nextValue
                    }
                case UInt8(ascii: "\""):
                    value = .string(try parseString())
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    value = .number(try parseNumber())
                case UInt8(ascii: "t"):
                    try parseLiteral("true")
                    value = .bool(true)
                case UInt8(ascii: "f"):
                    try parseLiteral("false")
                    value = .bool(false)
                case UInt8(ascii: "n"):
                    try parseLiteral("null")
                    value = .null
                default:
                    throw JSONError(code: .invalidJSON, byteOffset: position, reason: "unexpected character")
                }

                // Hand the value to its container, closing as many containers as the input closes.
                while true {
                    skipWhitespace()
                    guard !stack.isEmpty else {
                        if position < count {
                            throw JSONError(code: .trailingData, byteOffset: position, reason: "unexpected data after the document")
                        }
                        return value
                    }
                    let top = stack.count - 1
                    let isObject = stack[top].isObject
                    if isObject {
                        let key = stack[top].key
                        stack[top].object.append(key: key, value: value)
                    } else {
                        stack[top].array.append(value)
                    }
                    guard position < count else { throw unexpectedEnd() }
                    let byte = bytes[position]
                    if byte == UInt8(ascii: ",") {
                        position += 1
                        skipWhitespace()
                        if isObject { try parseKey(into: &stack[top]) }
                        continue nextValue
                    }
                    if byte == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                        position += 1
                        let frame = stack.removeLast()
                        value = isObject ? .object(frame.object) : .array(frame.array)
                        continue
                    }
                    throw JSONError(
                        code: .invalidJSON, byteOffset: position,
                        reason: isObject ? "expected ',' or '}'" : "expected ',' or ']'")
                }
            }
        }

        @inline(__always)
        private mutating func skipWhitespace() {
            while position < count {
                switch bytes[position] {
                case 0x20, 0x0A, 0x0D, 0x09: position += 1
                default: return
                }
            }
        }

        private func unexpectedEnd() -> JSONError {
            JSONError(code: .unexpectedEnd, byteOffset: count, reason: "unexpected end of input")
        }

        private func checkDepth(_ openContainers: Int) throws(JSONError) {
            if openContainers >= limits.maxDepth {
                throw JSONError(code: .tooDeep, byteOffset: position, reason: "the document is nested too deeply")
            }
        }

        /// Reads `"key"` and the colon after it, leaving the position at the member's value.
        private mutating func parseKey(into frame: inout Frame) throws(JSONError) {
            guard position < count else { throw unexpectedEnd() }
            guard bytes[position] == UInt8(ascii: "\"") else {
                throw JSONError(code: .invalidJSON, byteOffset: position, reason: "expected a string key")
            }
            let keyStart = position
            let key = try parseString()
            if frame.object.contains(key: key) {
                throw JSONError(code: .duplicateKey, byteOffset: keyStart, reason: "duplicate key in object")
            }
            if let maxKeys = limits.maxKeysPerObject, frame.object.count >= maxKeys {
                throw JSONError(code: .tooManyKeys, byteOffset: keyStart, reason: "the object has too many keys")
            }
            skipWhitespace()
            guard position < count else { throw unexpectedEnd() }
            guard bytes[position] == UInt8(ascii: ":") else {
                throw JSONError(code: .invalidJSON, byteOffset: position, reason: "expected ':'")
            }
            position += 1
            skipWhitespace()
            frame.key = key
        }

        private mutating func parseLiteral(_ literal: StaticString) throws(JSONError) {
            let start = position
            let expected = literal.utf8Start
            for offset in 0..<literal.utf8CodeUnitCount {
                guard position < count else { throw unexpectedEnd() }
                guard bytes[position] == expected[offset] else {
                    throw JSONError(code: .invalidJSON, byteOffset: start, reason: "invalid literal")
                }
                position += 1
            }
        }

        // MARK: Numbers

        /// Reads a number at the position, which holds `-` or a digit.
        mutating func parseNumber() throws(JSONError) -> JSONNumber {
            let start = position
            var isInteger = true
            if bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard position < count else { throw unexpectedEnd() }
            switch bytes[position] {
            case UInt8(ascii: "0"):
                position += 1
                if position < count, isDigit(bytes[position]) {
                    throw JSONError(code: .invalidNumber, byteOffset: start, reason: "leading zeros are not allowed")
                }
            case UInt8(ascii: "1")...UInt8(ascii: "9"):
                skipDigits()
            default:
                throw JSONError(code: .invalidNumber, byteOffset: position, reason: "expected a digit")
            }
            if position < count, bytes[position] == UInt8(ascii: ".") {
                isInteger = false
                position += 1
                try requireDigits()
            }
            if position < count, bytes[position] | 0x20 == UInt8(ascii: "e") {
                isInteger = false
                position += 1
                if position < count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                    position += 1
                }
                try requireDigits()
            }
            if position - start > limits.maxNumberLength {
                throw JSONError(code: .numberTooLong, byteOffset: start, reason: "the number is too long")
            }
            return JSONNumber(validatedText: makeString(start..<position), isInteger: isInteger)
        }

        @inline(__always)
        private func isDigit(_ byte: UInt8) -> Bool {
            byte &- UInt8(ascii: "0") < 10
        }

        private mutating func skipDigits() {
            while position < count, isDigit(bytes[position]) { position += 1 }
        }

        private mutating func requireDigits() throws(JSONError) {
            guard position < count else { throw unexpectedEnd() }
            guard isDigit(bytes[position]) else {
                throw JSONError(code: .invalidNumber, byteOffset: position, reason: "expected a digit")
            }
            skipDigits()
        }

        // MARK: Strings

        /// Reads a string at the position, which holds its opening quote.
        private mutating func parseString() throws(JSONError) -> String {
            let quote = position
            position += 1
            let start = position
            // Most strings have no escapes: validate in place and copy once.
            while position < count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    try checkStringLength(position - start, quote: quote)
                    let string = makeString(start..<position)
                    position += 1
                    return string
                }
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 { throw controlCharacter() }
                if byte < 0x80 { position += 1 } else { try skipUTF8Sequence() }
            }
            guard position < count else { throw unexpectedEnd() }

            // Escapes: unescape into the scratch buffer, copying plain runs whole.
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<position]))
            while position < count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    try checkStringLength(scratch.count, quote: quote)
                    position += 1
                    return String(decoding: scratch, as: UTF8.self)
                }
                if byte == UInt8(ascii: "\\") {
                    try parseEscape()
                    continue
                }
                let run = position
                while position < count {
                    let byte = bytes[position]
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { break }
                    if byte < 0x20 { throw controlCharacter() }
                    if byte < 0x80 { position += 1 } else { try skipUTF8Sequence() }
                }
                scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<position]))
            }
            throw unexpectedEnd()
        }

        private func controlCharacter() -> JSONError {
            JSONError(code: .controlCharacter, byteOffset: position, reason: "control characters must be escaped in strings")
        }

        private func checkStringLength(_ length: Int, quote: Int) throws(JSONError) {
            if let maxStringBytes = limits.maxStringBytes, length > maxStringBytes {
                throw JSONError(code: .stringTooLong, byteOffset: quote, reason: "the string is too long")
            }
        }

        private func makeString(_ range: Range<Int>) -> String {
            String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }

        /// Steps over one well-formed multi-byte UTF-8 sequence (Unicode Table 3-7), refusing
        /// overlong forms, encoded surrogates, code points above U+10FFFF and truncated sequences.
        private mutating func skipUTF8Sequence() throws(JSONError) {
            let lead = bytes[position]
            let continuations: Int
            var low: UInt8 = 0x80
            var high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: continuations = 1
            case 0xE0: continuations = 2; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: continuations = 2
            case 0xED: continuations = 2; high = 0x9F
            case 0xF0: continuations = 3; low = 0x90
            case 0xF1...0xF3: continuations = 3
            case 0xF4: continuations = 3; high = 0x8F
            default: throw invalidUTF8()
            }
            for offset in 1...continuations {
                guard position + offset < count else { throw unexpectedEnd() }
                let byte = bytes[position + offset]
                guard byte >= low, byte <= high else { throw invalidUTF8() }
                low = 0x80
                high = 0xBF
            }
            position += continuations + 1
        }

        private func invalidUTF8() -> JSONError {
            JSONError(code: .invalidUTF8, byteOffset: position, reason: "the string is not valid UTF-8")
        }

        /// Unescapes one escape sequence at the position (its backslash) into the scratch buffer.
        private mutating func parseEscape() throws(JSONError) {
            let escape = position
            position += 1
            guard position < count else { throw unexpectedEnd() }
            let byte = bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(byte)
            case UInt8(ascii: "b"): scratch.append(0x08)
            case UInt8(ascii: "f"): scratch.append(0x0C)
            case UInt8(ascii: "n"): scratch.append(0x0A)
            case UInt8(ascii: "r"): scratch.append(0x0D)
            case UInt8(ascii: "t"): scratch.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                switch scalar {
                case 0xD800...0xDBFF:
                    guard position < count else { throw unexpectedEnd() }
                    guard bytes[position] == UInt8(ascii: "\\") else { throw unpairedSurrogate(at: escape) }
                    guard position + 1 < count else { throw unexpectedEnd() }
                    guard bytes[position + 1] == UInt8(ascii: "u") else { throw unpairedSurrogate(at: escape) }
                    position += 2
                    let low = try parseHex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw unpairedSurrogate(at: escape) }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                case 0xDC00...0xDFFF:
                    throw unpairedSurrogate(at: escape)
                default:
                    break
                }
                appendUTF8(scalar)
            default:
                throw JSONError(code: .invalidEscape, byteOffset: escape, reason: "invalid escape sequence")
            }
        }

        private func unpairedSurrogate(at offset: Int) -> JSONError {
            JSONError(code: .invalidEscape, byteOffset: offset, reason: "unpaired surrogate in \\u escape")
        }

        private mutating func parseHex4() throws(JSONError) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard position < count else { throw unexpectedEnd() }
                let byte = bytes[position]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default:
                    throw JSONError(code: .invalidEscape, byteOffset: position, reason: "expected four hex digits in \\u escape")
                }
                value = value << 4 | UInt32(digit)
                position += 1
            }
            return value
        }

        private mutating func appendUTF8(_ scalar: UInt32) {
            switch scalar {
            case 0..<0x80:
                scratch.append(UInt8(scalar))
            case 0x80..<0x800:
                scratch.append(UInt8(0xC0 | scalar >> 6))
                scratch.append(UInt8(0x80 | scalar & 0x3F))
            case 0x800..<0x10000:
                scratch.append(UInt8(0xE0 | scalar >> 12))
                scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
                scratch.append(UInt8(0x80 | scalar & 0x3F))
            default:
                scratch.append(UInt8(0xF0 | scalar >> 18))
                scratch.append(UInt8(0x80 | scalar >> 12 & 0x3F))
                scratch.append(UInt8(0x80 | scalar >> 6 & 0x3F))
                scratch.append(UInt8(0x80 | scalar & 0x3F))
            }
        }
    }
}
