/// A response body the server sends from elsewhere than memory: a region of an open file
/// (`ResponseFile`), a stream of chunks made on demand (`ResponseStream`), or events that come
/// when they come (`ResponseEventStream`).
///
/// `HTTP` imports nothing, so it cannot open files or run queries: conforming classes of other
/// modules own what they read from and release it when the last reference goes, which is why this
/// is a class-only protocol. A response dropped anywhere (client gone, error, shutdown) therefore
/// never leaks. Conformers must be immutable or synchronised: the server keeps its own progress.
public protocol ResponseBodySource: AnyObject, Sendable {}

/// A body whose length is known before it is sent: its `Content-Length`.
public protocol SizedResponseBody: ResponseBodySource {
    /// How many bytes the body has; this is the `Content-Length`.
    var length: Int { get }
}

/// A region of an open file that the server writes as a response body, without copying it
/// through user space.
public protocol ResponseFile: SizedResponseBody {
    /// An open, readable descriptor of a regular file; valid as long as this object lives.
    var descriptor: Int32 { get }
    /// Where the body starts in the file.
    var offset: Int { get }
}

/// A body made in chunks as the client takes them (from a database, say), so that a slow reader
/// never makes the server hold more than one chunk of it.
public protocol ResponseStream: SizedResponseBody {
    /// Makes the next bytes of the body, at most `maxBytes` and at least one, and hands them to
    /// `completion` from any thread (or an error: the body cannot be finished, and the connection
    /// closes). Called again only once `completion` has run, and never once `length` bytes came.
    func next(maxBytes: Int, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void)

    /// A chunk this stream gave, handed back once it is written (the server holds no other
    /// reference to it): a stream may fill its storage with a later chunk instead of allocating
    /// again. Does nothing unless the conformer keeps buffers.
    func recycle(_ chunk: [UInt8])
}

extension ResponseStream {
    public func recycle(_ chunk: [UInt8]) {}
}

/// A body of unknown length made of what happens, for as long as it lasts (Server-Sent Events):
/// sent with `Transfer-Encoding: chunked` (to an HTTP/1.0 client: until the connection closes).
/// The server stops waiting for it when the client goes away or the connection must close, and
/// drops it then: its conformer releases what it waits on when the last reference goes.
public protocol ResponseEventStream: ResponseBodySource {
    /// Hands the next bytes to `completion` once there are some, from any thread, however long
    /// that takes (the source writes something often enough for the connection's write timeout),
    /// `[]` when the body is over, or an error (the connection closes). Called again only once
    /// `completion` has run.
    func next(_ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void)

    /// The kernel's send buffer for the connection while the stream lasts (`SO_SNDBUF`), or nil
    /// for the system's: a stream that bounds what it holds unread must not have the kernel hold
    /// megabytes more for a client that reads nothing.
    var sendBufferBytes: Int? { get }
}

extension ResponseEventStream {
    public var sendBufferBytes: Int? { nil }
}
