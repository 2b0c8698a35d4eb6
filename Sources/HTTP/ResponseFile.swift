/// A response body the server sends from elsewhere than memory: a region of an open file
/// (`ResponseFile`) or a stream of chunks made on demand (`ResponseStream`).
///
/// `HTTP` imports nothing, so it cannot open files or run queries: conforming classes of other
/// modules own what they read from and release it when the last reference goes, which is why this
/// is a class-only protocol. A response dropped anywhere (client gone, error, shutdown) therefore
/// never leaks. Conformers must be immutable or synchronised: the server keeps its own progress.
public protocol ResponseBodySource: AnyObject, Sendable {
    /// How many bytes the body has; this is the `Content-Length`.
    var length: Int { get }
}

/// A region of an open file that the server writes as a response body, without copying it
/// through user space.
public protocol ResponseFile: ResponseBodySource {
    /// An open, readable descriptor of a regular file; valid as long as this object lives.
    var descriptor: Int32 { get }
    /// Where the body starts in the file.
    var offset: Int { get }
}

/// A body made in chunks as the client takes them (from a database, say), so that a slow reader
/// never makes the server hold more than one chunk of it.
public protocol ResponseStream: ResponseBodySource {
    /// Makes the next bytes of the body, at most `maxBytes` and at least one, and hands them to
    /// `completion` from any thread (or an error: the body cannot be finished, and the connection
    /// closes). Called again only once `completion` has run, and never once `length` bytes came.
    func next(maxBytes: Int, _ completion: @escaping @Sendable (Result<[UInt8], any Error>) -> Void)
}
