import Synchronization

/// A flag that the party a piece of work is for sets when it no longer wants the result (a
/// client that closed its connection), so that work not yet started can be dropped.
public final class Cancellation: Sendable {
    private let cancelled = Atomic<Bool>(false)

    public init() {}

    public func cancel() {
        cancelled.store(true, ordering: .releasing)
    }

    public var isCancelled: Bool {
        cancelled.load(ordering: .acquiring)
    }
}
