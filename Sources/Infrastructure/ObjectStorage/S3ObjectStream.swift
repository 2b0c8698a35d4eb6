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
        // Taken out while this thread reads it, put back after (`deinit` cannot run meanwhile).
        var current = state.withLock { state in
            defer {
                state.connection = nil
                state.pending = []
            }
            return state
        }
        defer { state.withLock { $0 = current } }
        // One array, filled from what is pending, then straight from the connection.
        let want = min(maxBytes, current.pending.count + current.unread)
        var failure: S3Error?
        let bytes = [UInt8](unsafeUninitializedCapacity: want) { buffer, initialized in
            let fromPending = min(want, current.pending.count)
            _ = buffer.initialize(fromContentsOf: current.pending[..<fromPending])
            current.pending.removeFirst(fromPending)
            initialized = fromPending
            while initialized < want {
                guard let connection = current.connection else {
                    failure = S3Error(.unavailable, "\(what): the body ended \(current.unread) bytes early")
                    return
                }
                do throws(OutboundError) {
                    connection.stream.timeout = timeout
                    let count = try connection.stream.read(
                        into: UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: buffer[initialized..<want])))
                    guard count > 0 else { throw OutboundError(.connectionClosed, "closed with \(current.unread) bytes of the body unread") }
                    initialized += count
                    current.unread -= count
                } catch {
                    connection.stream.close(grace: .zero)
                    current.connection = nil
                    failure = S3Client.mapped(error, what)
                    return
                }
            }
        }
        if let failure { throw failure }
        Self.release(&current, to: connections)
        return bytes
    }

    /// Once the whole body is off the connection: back to the pool, or closed.
    private static func release(_ state: inout State, to connections: S3ConnectionPool) {
        guard state.unread == 0, let connection = state.connection else { return }
        state.connection = nil
        if state.keepsAlive { connections.giveBack(connection) } else { connection.stream.close(grace: .zero) }
    }
}
