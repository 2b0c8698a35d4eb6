import HTTP
import Threads

/// The shell's side of one connection: its socket, its machine and its pending output.
final class Connection {
    let fd: Int32
    let token: UInt64
    var machine: ConnectionStateMachine
    var output: [UInt8] = []
    var outputOffset = 0
    /// The file or stream body being sent after `output`, where it has got to and what is left.
    var file: (any ResponseBodySource)?
    /// Whether a stream body's next chunk has been asked for and not come yet.
    var awaitingChunk = false
    /// Whether the stream's chunks are framed for `Transfer-Encoding: chunked`.
    var chunked = false
    var fileOffset = 0
    var fileRemaining = 0
    var awaitingFinalFlush = false
    var registeredEvents: UInt32 = 0
    var closed = false
    /// The peer's address, read at accept (it counts against `maxConnectionsPerAddress`).
    let remoteAddress: String
    /// The cancellation of the request being answered off the loop, if any.
    var cancellation: Cancellation?
    /// Bytes of the server's body cap this connection's request holds.
    var reservedBodyBytes = 0
    // The request being answered, for the access log.
    var requestID = ""
    var method = "-"
    var route: Router.Route?
    var status = 0
    var requestStart: UInt64 = 0

    /// The id the admission step gave the request being read, which its dispatch and access log
    /// line keep (nil when it was not admitted: the dispatch gives one).
    var admittedRequestID: String?
    /// What the admission of the request being read returned, for its handler.
    var admitted: (any Sendable)?
    /// The route of the request being read, matched once for all that asks for it.
    let routes: RouteLookup

    init(fd: Int32, generation: UInt32, remoteAddress: String, routes: RouteLookup, machine: ConnectionStateMachine) {
        self.fd = fd
        self.routes = routes
        self.remoteAddress = remoteAddress
        self.token = UInt64(generation) << 32 | UInt64(UInt32(bitPattern: fd))
        self.machine = machine
    }

    /// Whether there is something to write now (a stream's chunk being made is not, yet).
    var hasPendingOutput: Bool { outputOffset < output.count || (file != nil && !awaitingChunk) }

    /// Whether more of the body is written as soon as `output` is, so that the kernel may hold a
    /// part-filled segment for it (`MSG_MORE`): only a file's bytes, which `sendfile` sends in the
    /// same flush. A stream's next chunk may not have come yet (a slow store, the end of the
    /// body): a segment held for it would wait for an acknowledgement of earlier bytes, or for
    /// the kernel's 200 ms probe when there are none (the last bytes of a body whose size is not
    /// a multiple of the chunk).
    var bytesFollowAtOnce: Bool { file is ResponseFile && fileRemaining > 0 }

    func startRequest(id: String, method: String, route: Router.Route?, now: UInt64) {
        requestID = id
        self.method = method
        self.route = route
        requestStart = now
    }
}
