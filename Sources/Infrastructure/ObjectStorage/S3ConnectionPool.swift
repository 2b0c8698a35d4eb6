import Outbound
import Synchronization

/// The store's keep-alive connections: a request takes an idle one or opens one, and gives it back
/// once its answer was read whole, unless the store said it would close it. Idle connections older
/// than `maximumIdleTime` are closed, not reused: the store may have closed them already.
final class S3ConnectionPool: Sendable {
    /// A connection lent to one request at a time; @unchecked because only its borrower touches it.
    final class Connection: @unchecked Sendable {
        let stream: ByteStream
        var idleSince = ContinuousClock.now
        /// Whether it served a request before: a failure before any answer byte is then likely a close
        /// the store made while it was idle, and the request is sent again on a new connection.
        var isReused = false

        init(stream: ByteStream) { self.stream = stream }
    }

    private let host: String
    private let port: Int
    private let isSecure: Bool
    private let configuration: S3Configuration
    private let idle = Mutex<[Connection]>([])
    let opened = Atomic<Int>(0)

    init(host: String, port: Int, isSecure: Bool, configuration: S3Configuration) {
        self.host = host
        self.port = port
        self.isSecure = isSecure
        self.configuration = configuration
    }

    deinit {
        for connection in idle.withLock({ $0 }) { connection.stream.close(grace: .zero) }
    }

    /// An idle connection young enough, or a new one (connected, TLS verified, within `connectTimeout`).
    func take(connectTimeout: Duration) throws(OutboundError) -> Connection {
        let now = ContinuousClock.now
        var stale: [Connection] = []
        let reused: Connection? = idle.withLock { idle in
            while let connection = idle.popLast() {
                if now - connection.idleSince < configuration.maximumIdleTime { return connection }
                stale.append(connection)
            }
            return nil
        }
        for connection in stale { connection.stream.close(grace: .zero) }
        if let reused {
            reused.isReused = true
            return reused
        }
        let stream = try ByteStream(host: host, port: port, timeout: connectTimeout, address: configuration.address)
        if isSecure {
            do throws(OutboundError) { try stream.startTLS(caFile: configuration.caFile) } catch {
                stream.close(grace: .zero)
                throw error
            }
        }
        stream.timeout = configuration.timeout
        opened.add(1, ordering: .relaxed)
        return Connection(stream: stream)
    }

    /// Back to the idle list after a whole answer; closed if the list is full.
    func giveBack(_ connection: Connection) {
        connection.idleSince = .now
        let kept = idle.withLock { idle in
            guard idle.count < configuration.maximumIdleConnections else { return false }
            idle.append(connection)
            return true
        }
        if !kept { connection.stream.close(grace: .milliseconds(50)) }
    }

    /// Closes every idle connection (the store went away, or the client is done).
    func closeIdle() {
        for connection in idle.withLock({ idle in
            defer { idle = [] }; return idle
        }) { connection.stream.close(grace: .zero) }
    }
}
