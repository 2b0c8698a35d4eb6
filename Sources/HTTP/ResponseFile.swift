/// A region of an open file that the server writes as a response body, without copying it
/// through user space.
///
/// `HTTP` imports nothing, so it cannot open or close files: a conforming class (the server's
/// `FileRegion`) owns the descriptor and closes it when the last reference goes, which is why this
/// is a class-only protocol. A response dropped anywhere (client gone, error, shutdown) therefore
/// never leaks a descriptor. Conformers must be immutable: the server keeps its own progress.
public protocol ResponseFile: AnyObject, Sendable {
    /// An open, readable descriptor of a regular file; valid as long as this object lives.
    var descriptor: Int32 { get }
    /// Where the body starts in the file.
    var offset: Int { get }
    /// How many bytes the body has; this is the `Content-Length`.
    var length: Int { get }
}
