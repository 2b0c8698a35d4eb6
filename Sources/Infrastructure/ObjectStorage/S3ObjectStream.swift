import Outbound
import Synchronization

/// The body of a `GET` as the store sends it (`S3Client.openObject`), for a caller that passes it
/// on (a download) instead of holding the object whole: `read` gives the next bytes. Read to its
/// end, its connection goes back to the pool; dropped before, the connection is closed, since the
/// rest of the body was never read.
public final class S3ObjectStream: Sendable {
    /// `.whole` or `.partial` (a range).
    public let status: S3ObjectBody.Status
    public let etag: String
    /// How many bytes the body has: its `Content-Length`.
    public let length: Int
    /// The whole object's size (from `Content-Range` for a range).
    public let totalSize: Int?
    private let connections: S3ConnectionPool
    private let timeout: Duration
    /// What the request was, for errors (`GET key`).
    private let what: String
    private let state: Mutex<State>

    private struct State {
        /// Nil once the body came whole, or failed.
        var connection: S3ConnectionPool.Connection?
        /// Bytes read from the connection and not yet handed out.
        var pending: [UInt8]
        /// The body's bytes still on the connection.
        var unread: Int
        /// Whether the connection may carry another request once the body is read.
        var keepsAlive: Bool
    }

    init(
        status: S3ObjectBody.Status, etag: String, length: Int, totalSize: Int?, first: [UInt8],
        connection: S3ConnectionPool.Connection?, keepsAlive: Bool, connections: S3ConnectionPool, timeout: Duration, what: String
    ) {
        self.status = status
        self.etag = etag
        self.length = length
        self.totalSize = totalSize
        self.connections = connections
        self.timeout = timeout
        self.what = what
        state = Mutex(State(connection: connection, pending: first, unread: length - first.count, keepsAlive: keepsAlive))
        if length == first.count { state.withLock { Self.release(&$0, to: connections) } }
    }

    deinit {
        state.withLock { $0.connection?.stream.close(grace: .zero) }
    }

    /// The next bytes of the body: `maxBytes` of them, or what is left when less; `[]` once it all
    /// came. Waits for the store, each read bounded by the client's timeout; a store that closes or
    /// stalls before the end is an error, and the connection is closed. Not for two threads at once.
    public func read(maxBytes: Int) throws(S3Error) -> [UInt8] {
        var bytes: [UInt8] = []
        try read(into: &bytes, maxBytes: maxBytes)
        return bytes
    }

    /// `read(maxBytes:)` into `buffer`, whose storage is filled again when it is large enough (a
    /// chunk written and handed back): no fresh pages for the kernel to fault in on every chunk.
    /// `buffer` then holds just the bytes read.
    public func read(into buffer: inout [UInt8], maxBytes: Int) throws(S3Error) {
        try withState { current throws(S3Error) in
            let want = min(maxBytes, current.pending.count + current.unread)
            var failure: S3Error?
            if buffer.capacity >= want {
                Self.resize(&buffer, to: want)
                buffer.withUnsafeMutableBufferPointer { failure = fill($0, &current) }
            } else {
                buffer = [UInt8](unsafeUninitializedCapacity: want) { storage, initialized in
                    failure = fill(UnsafeMutableBufferPointer(rebasing: storage[..<want]), &current)
                    initialized = want
                }
            }
            if let failure {
                buffer = []
                throw failure
            }
        }
    }

    /// The next bytes of the body that have come already, into `buffer` (its storage filled again
    /// when it is large enough): at most `maxBytes`, at least one; false when none has come (or
    /// over TLS), for the caller to `read` on a thread that may wait. For a caller that must not
    /// wait: the event loop that writes them on.
    public func readIfReady(into buffer: inout [UInt8], maxBytes: Int) throws(S3Error) -> Bool {
        try withState { current throws(S3Error) in
            if !current.pending.isEmpty {
                // What came with the answer's head (a 16 KiB read at most), into the buffer's storage.
                let count = min(maxBytes, current.pending.count)
                buffer.removeAll(keepingCapacity: true)
                buffer.append(contentsOf: current.pending[..<count])
                current.pending.removeFirst(count)
                return true
            }
            let want = min(maxBytes, current.unread)
            guard want > 0, let connection = current.connection else { return false }
            Self.resize(&buffer, to: want)
            let count: Int?
            do throws(OutboundError) {
                let read = buffer.withUnsafeMutableBytes { bytes in
                    Result { () throws(OutboundError) in try connection.stream.readIfReady(into: bytes) }
                }
                count = try read.get()
                if count == 0 { throw OutboundError(.connectionClosed, "closed with \(current.unread) bytes of the body unread") }
            } catch {
                connection.stream.close(grace: .zero)
                current.connection = nil
                throw S3Client.mapped(error, what)
            }
            guard let count else { return false }
            buffer.removeLast(want - count)
            current.unread -= count
            return true
        }
    }

    /// Runs `body` on the state taken out while this thread reads (`deinit` cannot run
    /// meanwhile), then puts it back, the connection given back first if the body came whole.
    private func withState<Result>(_ body: (inout State) throws(S3Error) -> Result) throws(S3Error) -> Result {
        var current = state.withLock { state in
            defer {
                state.connection = nil
                state.pending = []
            }
            return state
        }
        defer {
            Self.release(&current, to: connections)
            state.withLock { $0 = current }
        }
        return try body(&current)
    }

    /// `buffer` with `count` bytes, its storage kept (what it held is to be overwritten).
    private static func resize(_ buffer: inout [UInt8], to count: Int) {
        if buffer.count > count {
            buffer.removeLast(buffer.count - count)
        } else if buffer.count < count {
            buffer.append(contentsOf: repeatElement(0, count: count - buffer.count))
        }
    }

    /// Fills `buffer` from what is pending, then straight from the connection; on an error,
    /// closes the connection and returns the error, the buffer part-filled.
    private func fill(_ buffer: UnsafeMutableBufferPointer<UInt8>, _ current: inout State) -> S3Error? {
        let fromPending = min(buffer.count, current.pending.count)
        _ = UnsafeMutableBufferPointer(rebasing: buffer[..<fromPending]).initialize(fromContentsOf: current.pending[..<fromPending])
        current.pending.removeFirst(fromPending)
        var filled = fromPending
        while filled < buffer.count {
            guard let connection = current.connection else {
                return S3Error(.unavailable, "\(what): the body ended \(current.unread) bytes early")
            }
            do throws(OutboundError) {
                connection.stream.timeout = timeout
                let count = try connection.stream.read(into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[filled...])))
                guard count > 0 else { throw OutboundError(.connectionClosed, "closed with \(current.unread) bytes of the body unread") }
                filled += count
                current.unread -= count
            } catch {
                connection.stream.close(grace: .zero)
                current.connection = nil
                return S3Client.mapped(error, what)
            }
        }
        return nil
    }

    /// Once the whole body is off the connection: back to the pool, or closed.
    private static func release(_ state: inout State, to connections: S3ConnectionPool) {
        guard state.unread == 0, let connection = state.connection else { return }
        state.connection = nil
        if state.keepsAlive { connections.giveBack(connection) } else { connection.stream.close(grace: .zero) }
    }
}
