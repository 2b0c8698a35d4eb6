import HTTP

/// The life of one HTTP/1.1 connection, with no I/O: bytes and events in, actions out.
///
/// The I/O shell (`EventLoop`) reads, writes, arms timers and runs handlers; this type decides
/// what those mean. Requests are answered one at a time in arrival order; bytes of pipelined
/// requests wait in the buffer until the response before them is written.
struct ConnectionStateMachine {
    /// What the shell must do next.
    enum Action: Equatable {
        case none
        /// Write `100 Continue`; nothing is told back when it is written.
        case sendContinue
        /// Run the handler for this request, then call `respond`.
        case dispatch(Request)
        /// Decide from the head alone whether the body may be read (authentication, before a large
        /// body is buffered), then call `admitted` or `refused` and `respond`. Nothing is read meanwhile.
        case admit(RequestHead)
        /// Answer with this error (through `respond`), then close.
        case reject(HTTPParseError)
        /// Write these bytes, then the file region if there is one, then call `writeCompleted`.
        case write([UInt8], file: (any ResponseBodySource)?, close: Bool)
        /// Half-close (`shutdown(SHUT_WR)`) and keep reading and discarding until EOF or the linger deadline.
        case closeWrite
        /// Close the socket now.
        case close

        static func == (lhs: Action, rhs: Action) -> Bool {
            switch (lhs, rhs) {
            case (.none, .none), (.sendContinue, .sendContinue), (.closeWrite, .closeWrite), (.close, .close): return true
            case (.admit(let a), .admit(let b)): return a.method == b.method && a.target == b.target
            case (.dispatch(let a), .dispatch(let b)):
                return a.head.method == b.head.method && a.head.target == b.head.target && a.body == b.body
            case (.reject(let a), .reject(let b)): return a == b
            case (.write(let a, let f1, let c1), .write(let b, let f2, let c2)): return a == b && f1 === f2 && c1 == c2
            default: return false
            }
        }
    }

    private enum State {
        /// Waiting for (the rest of) a request head; `since` is the first byte's arrival or nil when idle.
        case head(since: UInt64?)
        case body(RequestHead, BodyReader, BodyTimes)
        /// The head is with the shell for admission; the body waits (unread) until it answers.
        case admitting(RequestHead, BodyReader, BodyTimes)
        /// A request (or a rejection) is with the shell; `close` forces the connection to end after it.
        case responding(RequestHead?, close: Bool)
        /// The final response is being written.
        case writing(close: Bool, progressAt: UInt64)
        /// Our side is shut for writing; discarding input until EOF or the deadline.
        case lingering(until: UInt64)
        case closed
    }

    /// When a body began, when its last bytes came, and when its request must be complete.
    private struct BodyTimes {
        var since: UInt64
        var progressAt: UInt64
        /// The request's absolute deadline, from the first byte of its head.
        let endBy: UInt64
    }

    private enum BodyReader {
        case length(remaining: Int, body: [UInt8])
        case chunked(ChunkedDecoder, body: [UInt8])

        /// Whether the body may be longer than `bytes`: a `Content-Length` over it, or chunked.
        func mayExceed(_ bytes: Int) -> Bool {
            switch self {
            case .length(let remaining, _): remaining > bytes
            case .chunked: true
            }
        }
    }

    let configuration: ConnectionConfiguration
    /// The largest body a request may carry, decided from its head (routes may allow more).
    let bodyLimit: @Sendable (RequestHead) -> Int
    /// Whether a request's route must admit it from its head before a body of this head's size is
    /// read (asked only for bodies over `configuration.admissionThreshold`, or chunked ones).
    let needsAdmission: @Sendable (RequestHead) -> Bool

    private var state = State.head(since: nil)
    private var parser: RequestHeadParser
    /// Received bytes not yet consumed, from `bufferStart` on.
    private var buffer: [UInt8] = []
    private var bufferStart = 0
    private var idleSince: UInt64
    private var draining = false
    private var peerHalfClosed = false
    /// Whether the body of the response being written goes in chunks (an event stream to an
    /// HTTP/1.1 client), which the shell frames.
    private(set) var bodyIsChunked = false

    init(
        configuration: ConnectionConfiguration, now: UInt64, bodyLimit: @escaping @Sendable (RequestHead) -> Int,
        needsAdmission: @escaping @Sendable (RequestHead) -> Bool = { _ in false }
    ) {
        self.configuration = configuration
        self.bodyLimit = bodyLimit
        self.needsAdmission = needsAdmission
        self.parser = RequestHeadParser(limits: configuration.limits)
        self.idleSince = now
    }

    var isClosed: Bool { if case .closed = state { return true } else { return false } }

    /// Whether the shell should keep reading: not while a response is pending and enough is buffered.
    var wantsRead: Bool {
        switch state {
        case .closed: return false
        case .responding, .writing: return !peerHalfClosed && buffered < configuration.limits.maxHeaderBytes
        case .admitting: return false
        default: return !peerHalfClosed
        }
    }

    private var buffered: Int { buffer.count - bufferStart }

    /// When `timeout(now:)` should be called next, if ever.
    var deadline: UInt64? {
        switch state {
        case .head(let since):
            if let since { return since + configuration.headerTimeout }
            return idleSince + configuration.idleTimeout
        case .body(_, let reader, let times):
            let received: Int
            switch reader {
            case .length(_, let body), .chunked(_, let body): received = body.count
            }
            // The slowest of: a minimum rate, a pause in the bytes, the request's absolute deadline.
            return min(
                times.since + configuration.bodyGrace + UInt64(received) * 1_000_000_000 / configuration.minBodyBytesPerSecond,
                times.progressAt + configuration.bodyStallTimeout, times.endBy)
        case .admitting: return nil
        case .writing(_, let progressAt): return progressAt + configuration.writeTimeout
        case .lingering(let until): return until
        case .responding, .closed: return nil
        }
    }

    // MARK: - Inputs

    /// Bytes arrived from the peer.
    mutating func received(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> Action {
        switch state {
        case .closed: return .none
        case .lingering: return .none
        case .responding, .writing, .admitting:
            buffer.append(contentsOf: bytes)
            return .none
        case .head, .body:
            if case .head(nil) = state, !bytes.isEmpty { state = .head(since: now) }
            if buffered == 0 {
                // The common case: parse straight from the read buffer, copy only what is left over.
                return process(bytes, now: now)
            }
            buffer.append(contentsOf: bytes)
            return processBuffer(now: now)
        }
    }

    /// The peer closed its side (read returned 0).
    mutating func peerClosed() -> Action {
        peerHalfClosed = true
        switch state {
        case .head, .body, .admitting, .lingering:
            // Nothing complete is pending; an incomplete request cannot be answered usefully.
            state = .closed
            return .close
        case .responding(let head, _):
            state = .responding(head, close: true)
            return .none
        case .writing(_, let progressAt):
            state = .writing(close: true, progressAt: progressAt)
            return .none
        case .closed:
            return .none
        }
    }

    /// The handler (or the shell, for a rejection) produced the response to the pending request.
    mutating func respond(_ response: Response, date: HTTPDate.Text, now: UInt64) -> Action {
        guard case .responding(let head, let forcedClose) = state else { return .none }
        let version = head?.version ?? .http1_1
        let close =
            forcedClose || draining || !(head?.keepAlive ?? false) || peerHalfClosed
            || ResponseSerializer.closesAfter(response, version: version)
        let method = head?.method ?? .get
        var bytes: [UInt8] = []
        ResponseSerializer.serialize(
            response, requestMethod: method, keepAlive: !close, date: date,
            version: version, into: &bytes)
        // A file that is not sent (HEAD, 204, 304, empty) is left behind and closes with the response.
        var file = response.file
        if file != nil, response.bodyLength == 0 || !ResponseSerializer.sendsBody(status: response.status, requestMethod: method) {
            file = nil
        }
        bodyIsChunked = file != nil && response.bodyLength == nil && version == .http1_1
        state = .writing(close: close, progressAt: now)
        return .write(bytes, file: file, close: close)
    }

    /// Some bytes of the response were written but not all; the write deadline moves.
    mutating func writeProgressed(now: UInt64) {
        if case .writing(let close, _) = state { state = .writing(close: close, progressAt: now) }
    }

    /// The whole response was written.
    mutating func writeCompleted(now: UInt64) -> Action {
        guard case .writing(let close, _) = state else { return .none }
        if close {
            if peerHalfClosed {
                state = .closed
                return .close
            }
            state = .lingering(until: now + configuration.lingerTimeout)
            return .closeWrite
        }
        if draining, buffered == 0 {
            // A keep-alive response finished during a shutdown: the connection is idle now.
            state = .closed
            return .close
        }
        state = .head(since: buffered > 0 ? now : nil)
        idleSince = now
        return processBuffer(now: now)
    }

    /// The deadline passed (the shell may call early; nothing happens then).
    mutating func timeout(now: UInt64) -> Action {
        guard let deadline, now >= deadline else { return .none }
        switch state {
        case .head(let since):
            if since == nil {
                state = .closed
                return .close
            }
            return reject(.headerTimeout)
        case .body(let head, _, _):
            return reject(.bodyTimeout, head: head)
        case .admitting:
            return .none
        case .writing, .lingering:
            state = .closed
            return .close
        case .responding, .closed:
            return .none
        }
    }

    /// Graceful shutdown: finish what is in flight with `Connection: close`, close what is idle.
    mutating func beginDraining() -> Action {
        draining = true
        switch state {
        case .head:
            // A partial head is not in flight yet; the client will retry on a new connection.
            state = .closed
            return .close
        case .body, .admitting, .responding, .writing, .lingering, .closed:
            return .none
        }
    }

    /// The body bytes this request will hold once read: its `Content-Length` (the body buffer is
    /// reserved for it), or what a chunked body has so far; 0 outside a body.
    var expectedBodyBytes: Int {
        switch state {
        case .body(_, let reader, _), .admitting(_, let reader, _):
            switch reader {
            case .length(let remaining, let body): return body.count + remaining
            case .chunked(_, let body): return body.count
            }
        default:
            return 0
        }
    }

    /// The shell cannot hold this request's body (the server's bodies are at their cap): answer it
    /// with `respond`; the connection closes after, with the body unread.
    mutating func bodyRefused() {
        switch state {
        case .body(let head, _, _), .admitting(let head, _, _):
            parser.reset()
            buffer = []
            bufferStart = 0
            state = .responding(head, close: true)
        default:
            return
        }
    }

    /// The shell admitted the request of `.admit`: its body is read now.
    mutating func admitted(now: UInt64) -> Action {
        guard case .admitting(let head, let reader, let times) = state else { return .none }
        state = .body(head, reader, BodyTimes(since: now, progressAt: now, endBy: times.endBy))
        if head.expectContinue, buffered == 0 { return .sendContinue }
        return processBuffer(now: now)
    }

    /// The shell refused the request of `.admit`; answer it with `respond`. The unread body
    /// leaves the connection unusable, so it closes after the answer.
    mutating func refused() {
        guard case .admitting = state else { return }
        bodyRefused()
    }

    // MARK: - Parsing

    private mutating func processBuffer(now: UInt64) -> Action {
        guard buffered > 0 else { return .none }
        let pending = buffer[bufferStart...]
        buffer = []
        bufferStart = 0
        return pending.withUnsafeBytes { process($0, now: now) }
    }

    /// Parses from `input`, which begins where the buffer's unconsumed bytes began; keeps what is left.
    private mutating func process(_ input: UnsafeRawBufferPointer, now: UInt64) -> Action {
        var offset = 0
        let action = step(input, offset: &offset, now: now)
        if offset < input.count {
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[offset...]))
        }
        return action
    }

    private mutating func step(_ input: UnsafeRawBufferPointer, offset: inout Int, now: UInt64) -> Action {
        if case .head = state {
            switch parser.parse(input) {
            case .needMore:
                return .none
            case .failed(let error):
                offset = input.count
                return reject(error)
            case .complete(let head, let consumed):
                offset = consumed
                var started = now
                if case .head(let since?) = state { started = since }
                switch head.framing {
                case .none:
                    // No body, so no limit to look up.
                    return dispatch(Request(head: head))
                case .contentLength(let length):
                    let limit = bodyLimit(head)
                    if length > limit { return reject(.bodyTooLarge, head: head) }
                    var body: [UInt8] = []
                    body.reserveCapacity(min(length, 1 << 20))
                    state = .body(head, .length(remaining: length, body: body), bodyTimes(started: started, now: now, limit: limit))
                case .chunked:
                    let limit = bodyLimit(head)
                    state = .body(
                        head, .chunked(ChunkedDecoder(maxBodyBytes: limit, limits: configuration.limits), body: []),
                        bodyTimes(started: started, now: now, limit: limit))
                }
                if case .body(_, let reader, let times) = state, reader.mayExceed(configuration.admissionThreshold), needsAdmission(head) {
                    // Kept unread: bytes of the body already here wait in the buffer.
                    if offset < input.count {
                        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: input[offset...]))
                        offset = input.count
                    }
                    state = .admitting(head, reader, times)
                    return .admit(head)
                }
                if head.expectContinue, offset == input.count {
                    return .sendContinue
                }
            }
        }
        guard case .body(let head, var reader, var times) = state else { return .none }
        if offset < input.count { times.progressAt = now }
        state = .closed  // while `reader` is being mutated outside the enum, to keep its buffer unique
        let rest = UnsafeRawBufferPointer(rebasing: input[offset...])
        switch reader {
        case .length(let remaining, var body):
            reader = .length(remaining: 0, body: [])  // drop the second reference so appends do not copy
            let take = min(remaining, rest.count)
            if body.count + take > body.capacity {
                // Past the first MiB reserved up front the client has proved it is sending: grow once
                // to the announced length instead of doubling (a 10 MiB upload would otherwise be
                // copied four times and end in a 16 MiB buffer).
                body.reserveCapacity(body.count + remaining)
            }
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: rest[..<take]))
            offset += take
            if take == remaining { return dispatch(Request(head: head, body: body)) }
            reader = .length(remaining: remaining - take, body: body)
        case .chunked(var decoder, var body):
            reader = .length(remaining: 0, body: [])
            let result = decoder.decode(rest) { body.append(contentsOf: $0) }
            switch result {
            case .needMore:
                offset = input.count
                reader = .chunked(decoder, body: body)
            case .done(let consumed):
                offset += consumed
                return dispatch(Request(head: head, body: body))
            case .failed(let error):
                offset = input.count
                return reject(error, head: head)
            }
        }
        state = .body(head, reader, times)
        return .none
    }

    /// A body's times: it begins now, and its request must be complete by the request timeout
    /// from the head's first byte (the upload timeout for a route that allows more than the
    /// server's default body).
    private func bodyTimes(started: UInt64, now: UInt64, limit: Int) -> BodyTimes {
        let timeout = limit > configuration.limits.maxBodyBytes ? configuration.uploadTimeout : configuration.requestTimeout
        return BodyTimes(since: now, progressAt: now, endBy: started + timeout)
    }

    private mutating func dispatch(_ request: Request) -> Action {
        state = .responding(request.head, close: false)
        return .dispatch(request)
    }

    private mutating func reject(_ error: HTTPParseError, head: RequestHead? = nil) -> Action {
        parser.reset()
        state = .responding(head, close: true)
        return .reject(error)
    }
}

extension HTTPParseError {
    static let headerTimeout = HTTPParseError(
        code: .headerTimeout, status: .requestTimeout,
        detail: "The request head did not arrive in time.")
    static let bodyTimeout = HTTPParseError(
        code: .bodyTimeout, status: .requestTimeout,
        detail: "The request body arrived too slowly.")
}
