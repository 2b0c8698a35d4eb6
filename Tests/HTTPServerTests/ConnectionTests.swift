import HTTP
@testable import HTTPServer
import TestSupport
import Testing

/// A body of `length` bytes that the test never asks for.
private final class Stream: ResponseStream {
    let length: Int
    init(length: Int) { self.length = length }
    func next(maxBytes: Int, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {}
}

private final class File: ResponseFile {
    let length: Int
    let descriptor: Int32 = -1
    let offset = 0
    init(length: Int) { self.length = length }
}

private final class Events: ResponseEventStream {
    func next(_ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void) {}
}

private func connection(_ file: (any ResponseBodySource)?, remaining: Int) -> Connection {
    let machine = ConnectionStateMachine(configuration: ConnectionConfiguration(ServerConfiguration()), now: 0, bodyLimit: { _ in 0 })
    let connection = Connection(fd: -1, generation: 0, remoteAddress: "test", routes: RouteLookup(Router()), machine: machine)
    connection.file = file
    connection.fileRemaining = remaining
    return connection
}

/// What the shell asks the kernel to hold back (`MSG_MORE`) when it writes a connection's output.
@Suite(.testThreads) struct ConnectionTests {
    @Test func aPartFilledSegmentWaitsOnlyForAFileSentInTheSameFlush() {
        #expect(connection(File(length: 10), remaining: 10).bytesFollowAtOnce)
        #expect(!connection(File(length: 10), remaining: 0).bytesFollowAtOnce)
        #expect(!connection(nil, remaining: 0).bytesFollowAtOnce)
        #expect(!connection(Events(), remaining: 0).bytesFollowAtOnce)
        // A stream's last chunk (nothing follows it), and one in the middle (the next may be slow
        // to come): held back, their last segment would wait for an acknowledgement or for the
        // kernel's 200 ms probe.
        #expect(!connection(Stream(length: 262_145), remaining: 0).bytesFollowAtOnce)
        #expect(!connection(Stream(length: 262_145), remaining: 1).bytesFollowAtOnce)
    }
}
