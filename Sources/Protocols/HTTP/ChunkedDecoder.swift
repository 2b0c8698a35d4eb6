/// An incremental decoder for the chunked transfer coding (RFC 9112 §7.1), trailers included.
///
/// Strict: hex sizes of at most 16 digits, extensions bounded in length and free of controls,
/// CRLF after every size line and every chunk, trailer fields validated like header fields and
/// then discarded. Whatever follows the final CRLF belongs to the next request.
public struct ChunkedDecoder: Sendable {
    /// The outcome of one call.
    public enum Result: Sendable, Equatable {
        /// All input was consumed; the body is not finished.
        case needMore
        /// The body ended after `consumed` bytes of this input.
        case done(consumed: Int)
        /// The body is malformed or too large; answer with the error and close.
        case failed(HTTPParseError)
    }

    private enum State: Sendable {
        case sizeStart
        case size(digits: Int)
        case sizeWhitespace
        case sizeExtension
        case sizeLF
        case data(remaining: Int)
        case dataCR
        case dataLF
        case trailerLineStart
        case trailerName
        case trailerValue
        case trailerLF
        case endLF
        case done
    }

    private var state = State.sizeStart
    private var chunkSize: UInt64 = 0
    private var extensionBytes = 0
    private var trailerLineBytes = 0
    private var trailerBytes = 0
    private var trailerCount = 0
    /// Body bytes decoded so far.
    public private(set) var bodyBytes = 0
    public let maxBodyBytes: Int
    public let limits: HTTPLimits

    public init(maxBodyBytes: Int, limits: HTTPLimits = .default) {
        self.maxBodyBytes = maxBodyBytes
        self.limits = limits
    }

    /// Decodes `input`, calling `emit` with each run of body bytes.
    public mutating func decode(_ input: UnsafeRawBufferPointer, emit: (UnsafeRawBufferPointer) -> Void) -> Result {
        let bytes = input.bindMemory(to: UInt8.self)
        var i = 0
        while i < bytes.count {
            if case .data(let remaining) = state {
                let take = min(remaining, bytes.count - i)
                emit(UnsafeRawBufferPointer(rebasing: input[i..<(i + take)]))
                i += take
                state = take == remaining ? .dataCR : .data(remaining: remaining - take)
                continue
            }
            let byte = bytes[i]
            i += 1
            switch state {
            case .sizeStart:
                guard let digit = ASCII.hexValue(byte) else { return .failed(.invalidChunkSize) }
                chunkSize = digit
                state = .size(digits: 1)
            case .size(let digits):
                if let digit = ASCII.hexValue(byte) {
                    guard digits < 16 else { return .failed(.chunkSizeOverflow) }
                    chunkSize = chunkSize << 4 | digit
                    state = .size(digits: digits + 1)
                } else if byte == ASCII.cr {
                    state = .sizeLF
                } else if byte == UInt8(ascii: ";") {
                    extensionBytes = 0
                    state = .sizeExtension
                } else if ASCII.isWhitespace(byte) {
                    // BWS counts toward the extension limit, or the size line would have no bound.
                    extensionBytes = 1
                    state = .sizeWhitespace
                } else {
                    return .failed(.invalidChunkSize)
                }
            case .sizeWhitespace:
                // BWS is allowed only before a chunk extension.
                if byte == UInt8(ascii: ";") {
                    state = .sizeExtension
                } else if ASCII.isWhitespace(byte) {
                    extensionBytes += 1
                    if extensionBytes > limits.maxChunkExtensionBytes { return .failed(.chunkExtensionTooLong) }
                } else {
                    return .failed(.invalidChunkSize)
                }
            case .sizeExtension:
                if byte == ASCII.cr {
                    state = .sizeLF
                } else {
                    guard ASCII.isFieldValue(byte) else { return .failed(.invalidChunkExtension) }
                    extensionBytes += 1
                    if extensionBytes > limits.maxChunkExtensionBytes { return .failed(.chunkExtensionTooLong) }
                }
            case .sizeLF:
                guard byte == ASCII.lf else { return .failed(.bareCR) }
                if chunkSize == 0 {
                    state = .trailerLineStart
                } else {
                    guard chunkSize <= UInt64(maxBodyBytes - bodyBytes) else { return .failed(.bodyTooLarge) }
                    bodyBytes += Int(chunkSize)
                    state = .data(remaining: Int(chunkSize))
                }
            case .data:
                preconditionFailure("handled above")
            case .dataCR:
                guard byte == ASCII.cr else { return .failed(.invalidChunkTerminator) }
                state = .dataLF
            case .dataLF:
                guard byte == ASCII.lf else { return .failed(.invalidChunkTerminator) }
                state = .sizeStart
            case .trailerLineStart:
                if byte == ASCII.cr {
                    state = .endLF
                } else {
                    guard ASCII.isToken(byte) else { return .failed(ASCII.isWhitespace(byte) ? .obsFold : .invalidTrailer) }
                    trailerCount += 1
                    if trailerCount > limits.maxHeaderCount { return .failed(.tooManyHeaders) }
                    trailerLineBytes = 1
                    trailerBytes += 1
                    state = .trailerName
                }
            case .trailerName:
                trailerLineBytes += 1
                trailerBytes += 1
                if byte == ASCII.colon {
                    state = .trailerValue
                } else if !ASCII.isToken(byte) {
                    return .failed(ASCII.isWhitespace(byte) ? .whitespaceBeforeColon : .invalidTrailer)
                }
            case .trailerValue:
                if byte == ASCII.cr {
                    state = .trailerLF
                } else {
                    guard ASCII.isFieldValue(byte) else { return .failed(.invalidFieldValue) }
                    trailerLineBytes += 1
                    trailerBytes += 1
                }
            case .trailerLF:
                guard byte == ASCII.lf else { return .failed(.bareCR) }
                state = .trailerLineStart
            case .endLF:
                guard byte == ASCII.lf else { return .failed(.bareCR) }
                state = .done
                return .done(consumed: i)
            case .done:
                return .done(consumed: i - 1)
            }
            if trailerLineBytes > limits.maxFieldBytes { return .failed(.fieldTooLarge) }
            if trailerBytes > limits.maxHeaderBytes { return .failed(.headersTooLarge) }
        }
        if case .done = state { return .done(consumed: 0) }
        return .needMore
    }
}
